import { keySlot } from './cluster-routing';

/**
 * A key of the package's own next to `stream`, in the stream's Cluster slot (a script's keys must
 * never cross slots): `{<tag>}:<kind>:<scope>:<name>`, where `<tag>` hashes to the stream's slot
 * and `<scope>` tells streams that share a tag apart:
 *
 * - a stream with a hash tag (`{orders}:eu`) hashes by that tag: `{orders}:<kind>:{orders}:eu...`;
 * - a stream without one hashes by its whole name: `{orders-eu}:<kind>:...` (the stream is the tag);
 * - a name without a tag that holds a `}` cannot be wrapped in braces: a short stand-in tag of
 *   the same slot is used (found once per name, kept).
 *
 * `scope` is `<stream>` for a tagged stream and empty otherwise, then `parts` joined by `:`.
 */
export function keyInSlotOf(stream: string, kind: string, ...parts: string[]): string {
  const tag = hashTagOf(stream);
  const head =
    tag !== undefined ? `{${tag}}:${kind}:${stream}` : `{${slotStandIn(stream)}}:${kind}:`;
  return [head, ...parts].join(':');
}

/** The content of the key's hash tag, as Redis Cluster reads it; `undefined` without one. */
function hashTagOf(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  if (close < 0 || close === open + 1) return undefined;
  return key.slice(open + 1, close);
}

/** Stand-in tags already found, by stream name (names with `}` but no hash tag are rare). */
const standIns = new Map<string, string>();

/** A string with no `}` hashing to `stream`'s slot: the name itself when it has no `}`. */
function slotStandIn(stream: string): string {
  if (!stream.includes('}')) return stream;
  const known = standIns.get(stream);
  if (known !== undefined) return known;
  const slot = keySlot(stream);
  // 16384 slots: a few tens of thousands of candidates find any slot
  for (let n = 0; ; n++) {
    const candidate = `echo-slot-${n}`;
    if (keySlot(candidate) === slot) {
      standIns.set(stream, candidate);
      return candidate;
    }
  }
}

/**
 * A key of the library's own next to `stream`, in its hash slot (so one MGET or pipeline per slot
 * can name both on a Cluster): `stream` itself as the prefix when it has a hash tag
 * (`{orders}:eu` -> `{orders}:eu<suffix>`), else the whole name as the tag
 * (`orders` -> `{orders}<suffix>`); a name with a `}` but no tag gets a stand-in tag of its slot.
 */
export function slotKeyNextTo(stream: string, suffix: string): string {
  if (hashTagOf(stream) !== undefined) return `${stream}${suffix}`;
  return `{${slotStandIn(stream)}}${suffix}`;
}
