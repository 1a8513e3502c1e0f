/**
 * Reads the replies of the stream commands in every shape ioredis hands them over.
 *
 * NOTE: ioredis 6 speaks RESP3 by default, and a RESP3 map arrives in one of three shapes:
 * - RESP2 (`protocol: 2`): no maps at all; XREAD(GROUP) is `[[stream, entries]]`, XINFO rows and
 *   CONFIG GET are flat `[key, value, ...]` arrays;
 * - RESP3 with the default `replyMapping: 'legacy'`: every map is flattened to `[key, value, ...]`,
 *   so XREAD(GROUP) sent through `call()` is `[stream, entries]` (ioredis re-wraps it into
 *   `[[stream, entries]]` only for its lower-case `xreadgroup()` method, keyed by command name);
 * - RESP3 with `replyMapping: 'resp3'`: maps are plain objects, `{ [stream]: entries }`.
 * Arrays (entries, XPENDING rows, XAUTOCLAIM, XCLAIM) and nils have one shape under all three.
 */

/** One stream entry as read: `fields` is `null` when the entry was deleted while pending. */
export interface RawEntry {
  entryId: string;
  fields: string[] | null;
  /**
   * Its delivery count with this read, when the read says (an XREADGROUP ... CLAIM on Redis
   * >= 8.4: a claimed entry's count before it plus one, a new entry's 1); absent otherwise.
   */
  deliveries?: number;
}

/** The entries of the one stream an XREADGROUP named; `[]` for a nil reply (a read that timed out). */
export function parseReadReply(reply: unknown): RawEntry[] {
  const items = firstStreamEntries(reply);
  if (!Array.isArray(items)) return [];
  const out: RawEntry[] = new Array(items.length);
  for (let i = 0; i < items.length; i++) out[i] = parseEntry(items[i]);
  return out;
}

/** The entries part of a one-stream XREAD(GROUP) reply, in any of the shapes above. */
function firstStreamEntries(reply: unknown): unknown {
  if (Array.isArray(reply)) {
    if (reply.length === 0) return undefined;
    // RESP2 / re-wrapped: [[stream, entries]]; flattened map: [stream, entries]
    return Array.isArray(reply[0]) ? (reply[0] as unknown[])[1] : reply[1];
  }
  if (isPlainMap(reply)) return Object.values(reply)[0];
  return undefined; // nil: nothing arrived
}

/**
 * The entries of every stream a multi-stream XREADGROUP named, by stream (streams that got nothing
 * are absent); an empty map for a nil reply (the read timed out or was unblocked).
 */
export function parseReadReplies(reply: unknown): Map<string, RawEntry[]> {
  const out = new Map<string, RawEntry[]>();
  const add = (stream: unknown, items: unknown): void => {
    if (!Array.isArray(items) || items.length === 0) return;
    out.set(String(stream), items.map(parseEntry));
  };
  if (Array.isArray(reply)) {
    if (reply.length > 0 && Array.isArray(reply[0])) {
      // RESP2 / re-wrapped: [[stream, entries], ...]
      for (const pair of reply as unknown[][]) add(pair[0], pair[1]);
    } else {
      // flattened map: [stream, entries, stream, entries, ...]
      for (let i = 0; i + 1 < reply.length; i += 2) add(reply[i], reply[i + 1]);
    }
  } else if (isPlainMap(reply)) {
    for (const [stream, items] of Object.entries(reply)) add(stream, items);
  }
  return out;
}

/**
 * `[id, fields]`, where `fields` is nil for an entry deleted while it was pending; a read with
 * CLAIM adds `idle, deliveries` (the count before this read: 0 for a new entry).
 */
export function parseEntry(item: unknown): RawEntry {
  const row = item as [string, string[] | null, unknown?, unknown?];
  const fields = Array.isArray(row[1]) ? row[1] : null;
  if (row.length < 4) return { entryId: String(row[0]), fields };
  return { entryId: String(row[0]), fields, deliveries: Number(row[3]) + 1 };
}

/** A map reply (XINFO rows, CONFIG GET) as a Map, whether flat `[k, v, ...]` or an object. */
export function mapReply(reply: unknown): Map<string, unknown> {
  const map = new Map<string, unknown>();
  if (Array.isArray(reply)) {
    for (let i = 0; i + 1 < reply.length; i += 2) map.set(String(reply[i]), reply[i + 1]);
  } else if (isPlainMap(reply)) {
    for (const [key, value] of Object.entries(reply)) map.set(key, value);
  }
  return map;
}

function isPlainMap(reply: unknown): reply is Record<string, unknown> {
  return typeof reply === 'object' && reply !== null && !Buffer.isBuffer(reply);
}
