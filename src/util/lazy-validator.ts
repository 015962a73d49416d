import AjvModule, { type ErrorObject, type Options, type ValidateFunction } from 'ajv';

// ajv ships CommonJS; under NodeNext its default export sits one level down.
const Ajv = ((AjvModule as unknown as { default?: typeof AjvModule }).default ?? AjvModule) as unknown as typeof AjvModule.default;

/** A compiled JSON Schema check, with the last call's errors, as ajv's own validate functions have. */
export interface LazyValidator {
  (value: unknown): boolean;
  errors: ErrorObject[] | null | undefined;
}

/**
 * A validator compiled on its first call, not when its module loads: compiling one schema costs 0.1–0.25 s of CPU,
 * which every process that imports the gateway (each CLI call, each test process) paid for checks it never ran.
 */
export function lazyValidator(schema: object, options: Options = { allErrors: true, useDefaults: true, strict: false }): LazyValidator {
  let compiled: ValidateFunction | undefined;
  const check = ((value: unknown): boolean => {
    compiled ??= new Ajv(options).compile(schema);
    const valid = compiled(value);
    check.errors = compiled.errors;
    return valid;
  }) as LazyValidator;
  check.errors = null;
  return check;
}
