// Names as the model and the generated code use them.

/** What an entity, field, command or input name must look like. */
export const IDENTIFIER = /^[A-Za-z][A-Za-z0-9_]*$/;

/** `ApproveExpense` -> `approve_expense`, `HTTPRetry` -> `http_retry`: the stable operation id. */
export function snakeCase(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .toLowerCase();
}

export function kebab(name: string): string {
  return snakeCase(name).replace(/_/g, '-');
}
