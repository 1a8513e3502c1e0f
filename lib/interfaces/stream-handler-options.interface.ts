import { CodecOption } from './codec.interface';
import type { ConsumerCleanupOptions } from './lifecycle.interface';
import type { RateLimitOptions, RetryPolicy } from './delivery-control.interface';

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
   * @default `${stream}:dlq`
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
}
