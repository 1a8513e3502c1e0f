/**
 * A short, safe description of a value for an error message (`'text'`, `undefined`, `an array`,
 * `an object`, `number 3`): never the contents of an object, which may be large or hostile.
 */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}
