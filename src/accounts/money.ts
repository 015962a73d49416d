/** Money is stored as integer micro-units; the API speaks decimal numbers. */
export const MICROS = 1_000_000;

export function toMicros(amount: number): number {
  return Math.round(amount * MICROS);
}

export function fromMicros(micros: number): number {
  return Math.round(micros) / MICROS;
}
