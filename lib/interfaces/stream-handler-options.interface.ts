import { CodecOption } from './codec.interface';
import type { ConsumerCleanupOptions } from './lifecycle.interface';
import type { RateLimitOptions, RetryPolicy } from './delivery-control.interface';
import type { StreamMessage } from './stream-message.interface';

/** `dedup` as an object: how long the group remembers an acked branded id. */
export interface DedupOptions {
  /**
   * How long (ms) an acked branded id is remembered.
   * @default 600000
   */
  windowMs: number;
}

/**
 * Names the entity a message is about, for `newerWins` (e.g. `(m: StreamMessage<Order>) =>
 * m.payload.accountId`); annotate the message's payload type.
 */
export type NewerWinsKey = (message: StreamMessage<never>) => string;

/** Per-handler options of `@StreamHandler(stream, group, options)`; module `defaults` apply first. */
export interface StreamHandlerOptions {
  /**
   * XREADGROUP / XAUTOCLAIM COUNT.
   * @default 100
   */
  batchSize: number;
  /**
   * XREADGROUP BLOCK in ms: the loop parks here, it never busy-polls.
   * @default 5000
   */
  blockMs: number;
  /**
   * Entries of one batch handled at once (1 = in stream order).
   * @default 1
   */
  concurrency: number;
  /**
   * A pending entry idle this long (ms) is reclaimed from its (dead) owner.
   * @default 30000
   */
  minIdleMs: number;
  /**
   * How often (ms) the reclaim + poison sweep runs.
   * @default min(minIdleMs / 2, 5000)
   */
  claimIntervalMs: number;
  /**
   * Cap on XAUTOCLAIM cursor iterations (and XPENDING pages) per sweep; `null` = unlimited.
   * @default null
   */
  maxClaimPasses: number | null;
  /**
   * An entry delivered this many times without an ack is a poison pill.
   * @default 5
   */
  maxDeliveries: number;
  /**
   * Where a group created by the loop starts (`'$'` = only new entries).
   * @default '0'
   */
  startId: string;
  /**
   * How entries are decoded.
   * @default 'json'
   */
  codec: CodecOption;
  /**
   * Batch mode: the method receives one read's messages and returns those to acknowledge.
   * @default false
   */
  batch: boolean;
  /**
   * Where dead letters are copied; `false` for none.
   * @default `<stream>:dlq`
   */
  deadLetterStream: string | false;
  /**
   * Deletes consumers of the group idle longer than `idleMs` that hold no pending entries (the
   * names of processes long gone); `false` to keep every consumer.
   * @default { idleMs: 86400000 }
   * @see docs/operations.md "Consumer cleanup"
   */
  consumerCleanup: ConsumerCleanupOptions | false;
  /**
   * When a failed entry is handed to a handler again; `false` = only the reclaim after
   * `minIdleMs` (the crash path, the behaviour before 0.2).
   * @default { type: 'exponential', initialMs: 1000, factor: 2, maxMs: 60000, jitter: 0 }
   * @see docs/delivery.md "Retries"
   */
  retry: RetryPolicy | false;
  /**
   * At most `max` handler starts per `perMs`, for this loop (`scope: 'process'`) or for every
   * consumer of the group (`scope: 'group'`); `null` = no limit.
   * @default null
   * @see docs/delivery.md "Rate limits"
   */
  rateLimit: RateLimitOptions | null;
  /**
   * Skip duplicates: an entry whose branded id this group already acked within the window is
   * acked without calling the handler (`true`: a 600000 ms window). Only acked entries count: a
   * dead-lettered entry redriven under its id runs again. The record is written in the same
   * script call as the entry's XACK.
   * @default false
   * @see docs/delivery.md "Duplicates and stale replays"
   */
  dedup: boolean | DedupOptions;
  /**
   * Skip stale replays: per entity (the key this function returns), the group keeps the highest
   * branded id it acked; an entry whose branded id is not higher is acked without calling the
   * handler. Within one process, entries of one key run one at a time in stream order whatever
   * `concurrency` is. `null`: off.
   * @default null
   * @see docs/delivery.md "Duplicates and stale replays"
   */
  newerWins: NewerWinsKey | null;
  /**
   * A partitioned stream (publish with `{ key }`): the count of its partitions, fixed per stream
   * (stored with it; another count fails at bootstrap). Every process of the group shares the
   * partitions through leases; entries of one key run one at a time and in stream order across
   * the fleet. `null`: a plain stream. Not with `batch: true`.
   * @default null
   * @see docs/partitions.md
   */
  partitions: number | null;
  /**
   * With `partitions`: how long a partition's lease lasts without renewal, in ms; the partitions
   * of a process that died move to the others after it.
   * @default 10000
   * @see docs/partitions.md "Leases"
   */
  partitionLeaseMs: number;
  /**
   * Exactly-once Redis effects: the handler writes through `m.tx` (publish, set, incrBy, hset,
   * del), and when it returns those writes, the entry's records and its XACK commit in one atomic
   * step, fenced (refused, nothing written, when the entry became another consumer's or was
   * delivered again meanwhile; counted in `totalFenced`). A throw writes nothing. Turns `dedup`
   * on unless it is set (its record is committed with the writes). Not with `batch: true`.
   * @default false
   * @see docs/exactly-once.md
   */
  exactlyOnce: boolean;
  /**
   * Removes acknowledged entries from the stream, so a stream used as a work queue needs no
   * trimming. `true`: each entry with its XACK (XACKDEL on Redis >= 8.2, XACK + XDEL in one
   * round trip before); refused at bootstrap when the stream has another group, and a group added
   * later turns it into `'acked-by-all'` with a warning. `'acked-by-all'`: an entry once every
   * group of the stream has acknowledged it, within 5 s of the last group's acknowledgement.
   * Dead-lettered entries go too (their copy is in the dead-letter stream). Not with an archive
   * handler (`@StreamArchive`), which must read what the groups acknowledged.
   * @default false
   * @see docs/delivery.md "Deleting acknowledged entries"
   */
  deleteOnAck: boolean | 'acked-by-all';
}
