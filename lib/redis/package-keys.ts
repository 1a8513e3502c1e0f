import { keySlot } from './connection';

/**
 * Every key the package writes besides the streams themselves, in one place (the ACL key
 * patterns of docs/operations.md "Redis ACL" cover them). Names never change: a rolling deploy
 * runs two versions side by side on the same keys. All but the rate budget and the retention lock
 * (each alone in its script or command) live in their stream's hash slot, since a script's keys
 * must never cross slots, through one of two schemes kept for the names already written:
 * {@link slotKeyNextTo} (`{orders}:echo-paused:billing`) and {@link keyInSlotOf}
 * (`{orders}:echo-dedup::billing:<id>`).
 * `{s}` below is the stream's name in braces, or the name itself when it has a hash tag
 * (`{orders}:eu:echo-paused:billing`); `<scope>` is empty, or the tagged stream's name.
 *
 * | key | what it holds | written by |
 * |---|---|---|
 * | `{s}:echo-paused:<group>` | the group's pause switch | admin, dashboard, CLI |
 * | `{s}:echo-checkpoints:<group>` | checkpoints of entries in hand (hash, field = entry id) | loops |
 * | `{s}:echo-outbox:<group>` | `exactlyOnce` publishes to other Cluster slots, to forward (stream) | loops |
 * | `{s}:echo-partitions` | a partitioned stream's partition count | producer, loops |
 * | `{s}:echo-leases:<group>`, `{s}:echo-members:<group>` | partition leases, live members | loops |
 * | `{s}:echo-idem:<scope>:<id>` | idempotent publish: the entry of a branded id | producer |
 * | `{s}:echo-dedup:<scope>:<group>:<id>`, `{s}:echo-newest:<scope>:<group>:<key>` | `dedup` / `newerWins` records | loops |
 * | `s:rate-limit:<group>` | the group's rate budget (`rateLimit: { scope: 'group' }`) | loops |
 * | `echo-stream:retention-lock:s` | which process runs retention | lifecycle |
 */

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
  const scope = hashTagOf(stream) !== undefined ? stream : '';
  return [`${slotTagOf(stream)}:${kind}:${scope}`, ...parts].join(':');
}

/**
 * The hash tag, braces included, that a key must carry to share `stream`'s Cluster slot (the keys
 * an exactly-once handler writes, for one): the stream's own tag when it has one
 * (`{orders}:eu` -> `{orders}`), else the whole name (`orders` -> `{orders}`), else, for a name
 * with a `}` but no tag, a stand-in tag of the same slot (`{echo-slot-<n>}`).
 */
export function slotTagOf(stream: string): string {
  return `{${hashTagOf(stream) ?? slotStandIn(stream)}}`;
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
  return `${slotTagOf(stream)}${suffix}`;
}

/** The pause key of `group` on `stream`, in the stream's hash slot (`{orders}:echo-paused:billing`). */
export function pauseKeyOf(stream: string, group: string): string {
  return slotKeyNextTo(stream, `:echo-paused:${group}`);
}

/** The checkpoint hash of `group` on `stream` (`{orders}:echo-checkpoints:billing`). */
export function checkpointKeyOf(stream: string, group: string): string {
  return slotKeyNextTo(stream, `:echo-checkpoints:${group}`);
}

/**
 * The transaction outbox of `group` on `stream` (`{orders}:echo-outbox:billing`): an
 * `exactlyOnce` handler's publishes to streams in other Cluster slots, committed here, forwarded.
 */
export function outboxKeyOf(stream: string, group: string): string {
  return slotKeyNextTo(stream, `:echo-outbox:${group}`);
}

/** The partition count of a partitioned stream (`{orders}:echo-partitions`). */
export function partitionCountKeyOf(stream: string): string {
  return slotKeyNextTo(stream, ':echo-partitions');
}

/** The leases of `group` on a partitioned stream (`{orders}:echo-leases:billing`). */
export function leaseKeyOf(stream: string, group: string): string {
  return slotKeyNextTo(stream, `:echo-leases:${group}`);
}

/** The live members of `group` on a partitioned stream (`{orders}:echo-members:billing`). */
export function memberKeyOf(stream: string, group: string): string {
  return slotKeyNextTo(stream, `:echo-members:${group}`);
}

/**
 * The index key of branded id `id` on `stream`, in the stream's hash slot (see
 * {@link keyInSlotOf}): `{orders}:echo-idem::<id>`, or for a stream with a hash tag
 * `{orders}:echo-idem:{orders}:eu:<id>`.
 */
export function idempotencyKey(stream: string, id: string): string {
  return keyInSlotOf(stream, 'echo-idem', id);
}

/** The record of branded id `id` acked by `group` on `stream` (dedup). */
export function ackedIdKey(stream: string, group: string, id: string): string {
  return keyInSlotOf(stream, 'echo-dedup', group, id);
}

/** The record of the newest branded id `group` acked for entity `key` on `stream` (newer-wins). */
export function newestIdKey(stream: string, group: string, key: string): string {
  return keyInSlotOf(stream, 'echo-newest', group, key);
}

/**
 * The two record keys of one stream and group without rebuilding their head per record:
 * `ackedIdKey(stream, group, id)` is `acked + id`, `newestIdKey(stream, group, key)` is
 * `newest + key` (the same text).
 */
export interface RecordKeyHeads {
  readonly acked: string;
  /** The byte length of `acked` (where a `dedup` key's branded id starts, for the script). */
  readonly ackedBytes: number;
  readonly newest: string;
}

/** The {@link RecordKeyHeads} of `stream` and `group`. */
export function recordKeyHeads(stream: string, group: string): RecordKeyHeads {
  const acked = `${keyInSlotOf(stream, 'echo-dedup', group)}:`;
  return {
    acked,
    ackedBytes: Buffer.byteLength(acked),
    newest: `${keyInSlotOf(stream, 'echo-newest', group)}:`,
  };
}

/** The key of a group's budget: next to its stream (same Cluster slot when the stream has a hash tag). */
export function rateBudgetKey(stream: string, group: string): string {
  return `${stream}:rate-limit:${group}`;
}

/** The lock of a stream's retention run (not in the stream's slot: only SET / GET / DEL touch it). */
export function retentionLockKey(stream: string): string {
  return `echo-stream:retention-lock:${stream}`;
}
