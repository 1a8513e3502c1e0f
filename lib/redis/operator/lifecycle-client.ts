import type { CommandLink } from '../connection';
import type { PartitionLeases } from '../partitions';
import type { ConsumerInfo, RawEntry, StreamQueries } from '../stream-roles';

/** What retention needs to know about one group to compute the floor. */
export interface GroupFloorInfo {
  name: string;
  /** XINFO GROUPS `last-delivered-id`: every later entry is still to be delivered. */
  lastDeliveredId: string;
  /** XPENDING's smallest pending id; `null` when nothing is pending. */
  oldestPendingId: string | null;
}

/** Outcome of {@link LifecycleClient.deleteIdleConsumer}. */
export type DeleteConsumerOutcome = 'deleted' | 'has-pending' | 'active' | 'gone';

/**
 * The Redis commands of retention, archive, history and consumer cleanup (docs/operations.md). The
 * lifecycle collaborators depend on this interface only.
 */
export interface LifecycleClient {
  /** Every group of the stream (XINFO GROUPS) with its oldest pending id (XPENDING summary). */
  groupFloors(stream: string): Promise<GroupFloorInfo[]>;
  /** XRANGE with COUNT (bounds as XRANGE takes them: `-`, `+`, `(id`, `ms`, `ms-seq`). */
  range(stream: string, start: string, end: string, count: number): Promise<RawEntry[]>;
  length(stream: string): Promise<number>;
  /** `XTRIM stream MINID = minId`: exact, deletes every entry below `minId`; returns how many. */
  trimBelow(stream: string, minId: string): Promise<number>;
  /** `SET key token NX PX ttlMs`: true when this call took the lock. */
  acquireLock(key: string, token: string, ttlMs: number): Promise<boolean>;
  /** Extends the lock to `ttlMs` from now if `token` still holds it (compare-and-pexpire). */
  renewLock(key: string, token: string, ttlMs: number): Promise<boolean>;
  /** Deletes the lock if `token` still holds it (compare-and-delete). */
  releaseLock(key: string, token: string): Promise<void>;
  consumers(stream: string, group: string): Promise<ConsumerInfo[]>;
  /**
   * Marks `consumer` as seen by the group now (resets its XINFO CONSUMERS `idle`) without reading
   * or touching any entry; creates the consumer if missing.
   */
  touchConsumer(stream: string, group: string, consumer: string): Promise<void>;
  /**
   * Atomically (one script): deletes `consumer` from the group only if it holds no pending entry
   * and has been idle at least `idleMs`. XGROUP DELCONSUMER drops a consumer's pending entries
   * from the PEL, so the check and the delete must not be split.
   */
  deleteIdleConsumer(
    stream: string,
    group: string,
    consumer: string,
    idleMs: number,
  ): Promise<DeleteConsumerOutcome>;
  /**
   * The stored partition count of `stream` (docs/partitions.md "Partition count"); `null` for a
   * plain stream: retention, history and cleanup of a partitioned stream work on its partitions.
   */
  partitionCount(stream: string): Promise<number | null>;
  /** The lease holder of each of the `count` partitions of `group` (`null`: free or expired). */
  partitionOwners(stream: string, group: string, count: number): Promise<Array<string | null>>;
}

const RENEW_SCRIPT = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`;

const RELEASE_SCRIPT = `if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`;

// -1: holds pending entries, -2: not idle long enough, -3: no such consumer, else XGROUP
// DELCONSUMER's reply (the pending count it dropped: 0, since the XPENDING above found none).
const DELETE_IDLE_CONSUMER_SCRIPT = `local held = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2])
if #held > 0 then return -1 end
local consumers = redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])
for _, c in ipairs(consumers) do
  local name, idle
  for i = 1, #c, 2 do
    if c[i] == 'name' then name = c[i + 1] elseif c[i] == 'idle' then idle = c[i + 1] end
  end
  if name == ARGV[2] then
    if idle == nil or idle < tonumber(ARGV[3]) then return -2 end
    return redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
  end
end
return -3`;

/** An id above any real entry's (see `touchConsumer`). */
const TOUCH_ID = '18446744073709551615-0';

/**
 * {@link LifecycleClient} over the app's shared connection (built by
 * `RedisStreamsClient.lifecycle()`). Reads that the stream queries already speak (XINFO, XRANGE,
 * XLEN) go through them; the rest is sent on the same command link, under its deadline rule.
 * Every command names its stream (or lock) key first, so on a Cluster it reaches the master of
 * that key's slot.
 */
export class RedisLifecycleClient implements LifecycleClient {
  constructor(
    private readonly link: CommandLink,
    private readonly streams: StreamQueries,
    private readonly partitions: Pick<PartitionLeases, 'storedCount' | 'table'>,
  ) {}

  partitionCount(stream: string): Promise<number | null> {
    return this.partitions.storedCount(stream);
  }

  async partitionOwners(
    stream: string,
    group: string,
    count: number,
  ): Promise<Array<string | null>> {
    return (await this.partitions.table(stream, group, count)).map((row) => row.owner);
  }

  async groupFloors(stream: string): Promise<GroupFloorInfo[]> {
    // XINFO first: an entry delivered after it is above its last-delivered-id, so an XPENDING
    // read a moment later can only make the floor more cautious, never less.
    const groups = await this.streams.groups(stream);
    return Promise.all(
      groups.map(async (group) => ({
        name: group.name,
        lastDeliveredId: group.lastDeliveredId,
        oldestPendingId: group.pending > 0 ? await this.oldestPending(stream, group.name) : null,
      })),
    );
  }

  range(stream: string, start: string, end: string, count: number): Promise<RawEntry[]> {
    return this.streams.range(stream, start, end, count);
  }

  length(stream: string): Promise<number> {
    return this.streams.length(stream);
  }

  async trimBelow(stream: string, minId: string): Promise<number> {
    // NOTE: '=' (exact), never '~': an approximate MINID trim may leave a partial node, and what
    // was archived must be exactly what is trimmed. XTRIM MINID needs Redis >= 6.2.
    return Number(await this.call('XTRIM', stream, 'MINID', '=', minId));
  }

  async acquireLock(key: string, token: string, ttlMs: number): Promise<boolean> {
    return (await this.call('SET', key, token, 'NX', 'PX', ttlMs)) === 'OK';
  }

  async renewLock(key: string, token: string, ttlMs: number): Promise<boolean> {
    return Number(await this.call('EVAL', RENEW_SCRIPT, 1, key, token, ttlMs)) === 1;
  }

  async releaseLock(key: string, token: string): Promise<void> {
    await this.call('EVAL', RELEASE_SCRIPT, 1, key, token);
  }

  consumers(stream: string, group: string): Promise<ConsumerInfo[]> {
    return this.streams.consumers(stream, group);
  }

  async touchConsumer(stream: string, group: string, consumer: string): Promise<void> {
    // NOTE: before Redis 7.2 only a read that succeeds refreshes a consumer's idle time (a parked
    // XREADGROUP > that gets nothing does not), so an idle but live consumer looks dead. A read of
    // its own pending entries after the highest possible id succeeds with nothing in it: the
    // idle time is reset, no entry is delivered and no delivery count moves.
    await this.call(
      'XREADGROUP',
      'GROUP',
      group,
      consumer,
      'COUNT',
      1,
      'STREAMS',
      stream,
      TOUCH_ID,
    );
  }

  async deleteIdleConsumer(
    stream: string,
    group: string,
    consumer: string,
    idleMs: number,
  ): Promise<DeleteConsumerOutcome> {
    const reply = Number(
      await this.call('EVAL', DELETE_IDLE_CONSUMER_SCRIPT, 1, stream, group, consumer, idleMs),
    );
    if (reply === -1) return 'has-pending';
    if (reply === -2) return 'active';
    if (reply === -3) return 'gone';
    return 'deleted';
  }

  private async oldestPending(stream: string, group: string): Promise<string | null> {
    const reply = (await this.call('XPENDING', stream, group)) as [unknown, unknown, ...unknown[]];
    return reply[1] === null || reply[1] === undefined ? null : String(reply[1]);
  }

  private call(...args: Array<string | number>): Promise<unknown> {
    return this.link.send(args);
  }
}
