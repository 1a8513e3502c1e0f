/** Message texts of the package, from one place. */
export const messages = {
  badStreamArgument: (decorator: string, what: string, value: unknown) =>
    `@${decorator}(): ${what} must be a non-empty string, got ${describe(value)}`,
  badOption: (where: string, option: string, expected: string, value: unknown) =>
    `${where}: option '${option}' must be ${expected}, got ${describe(value)}`,
  unknownOption: (where: string, option: string, known: readonly string[]) =>
    `${where}: unknown option '${option}' (known: ${known.join(', ')})`,
  duplicateHandler: (stream: string, group: string, first: string, second: string) =>
    `Two @StreamHandler methods consume ${stream}/${group}: ${first} and ${second}. ` +
    `Both would be the same consumer of the group and split its entries at random; ` +
    `use one handler per stream and group (or another group)`,
  requestScoped: (handler: string) =>
    `${handler} is on a request-scoped provider: a consumer loop needs one long-lived instance, ` +
    `so this handler is skipped`,
  evictionPolicy: (policy: string) =>
    `Redis maxmemory-policy is '${policy}': under memory pressure Redis may evict streams and ` +
    `consumer groups (entries lost). Use 'noeviction' for streams you cannot lose`,
};

function describe(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'object') return Array.isArray(value) ? 'an array' : 'an object';
  return `${typeof value} ${String(value)}`;
}
