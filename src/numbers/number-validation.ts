import type { NumberGrade } from './phone.js';

/**
 * How strictly a recipient is checked before Ferry accepts a message:
 * - `strict`: a valid number for its country (libphonenumber's number plan: ranges in service, lengths per range)
 * - `possible`: a known calling code and a length possible for it; whether the number exists is the carrier's call
 * - `off`: 3 to 15 digits
 * A gateway in the middle should not be stricter than the network behind it, so SMPP defaults to `possible`; REST
 * defaults to `strict` (an application typing a number gains from hearing about a typo at once).
 */
export type NumberValidation = 'strict' | 'possible' | 'off';

export const NUMBER_VALIDATIONS: readonly NumberValidation[] = ['strict', 'possible', 'off'];

/** The grades each policy accepts. */
const ACCEPTS: Readonly<Record<NumberValidation, ReadonlySet<NumberGrade>>> = {
  strict: new Set(['valid']),
  possible: new Set(['valid', 'possible']),
  off: new Set(['valid', 'possible', 'digits']),
};

const RANK: Readonly<Record<NumberValidation, number>> = { off: 0, possible: 1, strict: 2 };

/**
 * The policy for one message: the stricter of the account's and the route rule's when either is set (the account
 * cannot loosen a route an operator made strict, nor a route loosen a strict account), else the ingress default.
 */
export function effectiveValidation(account: NumberValidation | null, route: NumberValidation | null, ingressDefault: NumberValidation): NumberValidation {
  if (account && route) return RANK[account] >= RANK[route] ? account : route;
  return account ?? route ?? ingressDefault;
}

export function accepts(validation: NumberValidation, grade: NumberGrade): boolean {
  return ACCEPTS[validation].has(grade);
}
