/**
 * A key of the library's own next to `stream`, in its hash slot (so one MULTI, MGET or pipeline
 * per slot can name both on a Cluster): `stream` itself as the prefix when it has a hash tag
 * (`{orders}:eu` -> `{orders}:eu<suffix>`), else the whole name as the tag
 * (`orders` -> `{orders}<suffix>`). A name with a `}` but no tag keeps its own name as the prefix
 * (it may land in another slot: only batching across keys cares).
 */
export function slotKeyNextTo(stream: string, suffix: string): string {
  const open = stream.indexOf('{');
  const close = open >= 0 ? stream.indexOf('}', open + 1) : -1;
  if (close > open + 1) return `${stream}${suffix}`; // a non-empty hash tag: same slot
  if (!stream.includes('}')) return `{${stream}}${suffix}`;
  return `${stream}${suffix}`;
}
