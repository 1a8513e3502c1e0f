/** `[k1, v1, k2, v2]` -> `k1=v1 k2=v2`: how the dashboard and the CLI show an entry's fields. */
export function fieldsText(fields: readonly string[]): string {
  const parts: string[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) parts.push(`${fields[i]}=${fields[i + 1]}`);
  return parts.join(' ');
}
