import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError, type FieldError } from './errors.js';

/**
 * Text Postgres cannot store, refused at the edge: a NUL character (text and jsonb refuse it: SQLSTATE 22021 /
 * 22P05) and a lone UTF-16 surrogate (a JSON string like "\ud800" parses to one; it has no UTF-8 form). Checked for
 * every route before its handler, so that no product has to: otherwise the value reaches a statement and the
 * request ends in a 500 (or, where a service takes any storage error for an outage, a false 503).
 */
const UNSTORABLE = /\0|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Errors listed at most (one body may hold thousands of bad strings; the first ones tell the client enough). */
const MAX_ERRORS = 20;

export function isUnstorableText(s: string): boolean {
  return UNSTORABLE.test(s);
}

function problem(s: string): string {
  return s.includes('\0') ? 'must not contain a NUL character (\\u0000)' : 'must not contain a lone UTF-16 surrogate (not valid Unicode)';
}

/** A member name as shown in a field path, with what cannot be shown escaped. */
function shown(key: string): string {
  return key.replace(/[\0\uD800-\uDFFF]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * The unstorable strings (values and member names) in a parsed value, as field errors named the way schema validation
 * names them (`messages.3.text`, `querystring.status`). Walked with an explicit stack, not recursion: a JSON body may
 * nest deeper than the call stack goes, and the body limit bounds the work.
 */
export function unstorableFields(value: unknown, prefix: string): FieldError[] {
  const errors: FieldError[] = [];
  const stack: Array<[unknown, string]> = [[value, prefix]];
  while (stack.length && errors.length < MAX_ERRORS) {
    const [v, path] = stack.pop()!;
    if (typeof v === 'string') {
      if (UNSTORABLE.test(v)) errors.push({ field: path || '(root)', message: problem(v) });
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], path ? `${path}.${i}` : String(i)]);
    } else if (v && typeof v === 'object' && !Buffer.isBuffer(v)) {
      const entries = Object.entries(v as Record<string, unknown>);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [k, child] = entries[i];
        const field = path ? `${path}.${shown(k)}` : shown(k);
        if (UNSTORABLE.test(k)) errors.push({ field, message: `the member name ${problem(k)}` });
        else stack.push([child, field]);
      }
    }
  }
  return errors;
}

function refuse(errors: FieldError[]): ApiError {
  return new ApiError('VALIDATION_ERROR', { data: { errors } });
}

/**
 * Registers the check on an app: path parameters and query values when the request is routed (before
 * authentication, whose failure counting and key lookup never see them), the JSON body once parsed (before schema
 * validation, so the answer names the field the same way).
 */
export function guardText(app: FastifyInstance): void {
  app.addHook('onRequest', (req: FastifyRequest, _reply, done) => {
    if (req.is404) return done();
    const errors = [...unstorableFields(req.params, 'params'), ...unstorableFields(req.query, 'querystring')];
    done(errors.length ? refuse(errors) : undefined);
  });
  app.addHook('preValidation', (req: FastifyRequest, _reply, done) => {
    const errors = unstorableFields(req.body, '');
    done(errors.length ? refuse(errors) : undefined);
  });
}
