import { errorText } from '../../codec/codecs';
import { compareEntryIds } from '../../codec/entry-id';
import type { RawEntry, StreamsClient } from '../../redis/stream-roles';
import { type Delivery, deliveryCounts } from '../handle';
import type { LoopHealth } from '../health';
import { firstFew, NO_LONGER_OURS, type LoopContext } from '../context';
import type { StartLimiter } from '../limits';
import type { RetryScheduler } from '../retry';
import type { Settlement } from '../settle';

/** What claiming due retries needs besides the context. */
export interface RetryClaimsParts {
  readonly client: Pick<StreamsClient, 'reclaim' | 'pending' | 'release'>;
  readonly scheduler: Pick<RetryScheduler, 'nextDueAt' | 'takeDue' | 'putBack' | 'takeAll'>;
  readonly limiter: Pick<StartLimiter, 'take' | 'refund'>;
  readonly settlement: Pick<Settlement, 'gone'>;
  readonly delivery: Pick<Delivery, 'process'>;
  readonly health: Pick<LoopHealth, 'drainNeeded'>;
}

/**
 * The loop's side of retries: re-claims those that are due and hands them to the delivery, and
 * at stop gives the ones still waiting to peers, each due when it would have been here.
 */
export class RetryClaims {
  constructor(
    private readonly context: Pick<
      LoopContext,
      'stream' | 'group' | 'consumer' | 'where' | 'options' | 'logger' | 'now'
    >,
    private readonly parts: RetryClaimsParts,
  ) {}

  /** When the earliest retry is due; `Infinity` when none waits. */
  nextDueAt(): number {
    return this.parts.scheduler.nextDueAt();
  }

  /** True when a retry is due now. */
  due(): boolean {
    return this.parts.scheduler.nextDueAt() <= this.context.now();
  }

  /**
   * Hands the retries that are due to the handler: XCLAIM without JUSTID returns their bodies and
   * adds one to their delivery count (the new attempt), in one script call for all of them, which
   * claims only those the group still names this consumer as the owner of.
   */
  async runDue(): Promise<void> {
    const { client, scheduler, limiter, settlement, health, delivery } = this.parts;
    // in stream order, as any read (and as deliveryCounts' XPENDING range expects)
    const { count: allowed, window } = await limiter.take(this.context.options.batchSize);
    const ids = scheduler.takeDue(allowed).sort(compareEntryIds);
    limiter.refund(allowed - ids.length, window);
    if (ids.length === 0) return;
    let entries: RawEntry[];
    let lost: string[];
    let counts: Map<string, number>;
    try {
      // only the ones still ours: a peer that took one over while this process was frozen runs it
      ({ entries, lost } = await this.reclaim(ids));
    } catch (err) {
      scheduler.putBack(ids);
      throw err;
    }
    limiter.refund(ids.length - entries.length, window); // the starts of those that will not start
    try {
      // ours, but not claimed: deleted from the stream (acked as such)
      const notMissing = new Set([...entries.map((e) => e.entryId), ...lost]);
      const missing = ids.filter((id) => !notMissing.has(id));
      if (missing.length > 0) await settlement.gone(missing);
      counts = await deliveryCounts(this.context, client, entries);
    } catch (err) {
      health.drainNeeded(); // claimed, not started: the own PEL read picks them up
      throw err;
    }
    if (entries.length > 0) await delivery.process(entries, counts, window);
  }

  /** Claims the due `ids` this consumer still holds; says which a peer took over meanwhile. */
  private async reclaim(ids: string[]): Promise<{ entries: RawEntry[]; lost: string[] }> {
    const { stream, group, consumer, logger, where } = this.context;
    const { entries, lost } = await this.parts.client.reclaim(stream, group, consumer, ids);
    if (lost.length > 0)
      logger.warn(`${where}: ${lost.length} due retries (${firstFew(lost)}) are ${NO_LONGER_OURS}`);
    return { entries, lost };
  }

  /**
   * At stop: waiting retries go to peers. Each one's idle time is set so that a peer's sweep
   * (idle >= minIdleMs) takes it when it is due, not before (at once when already due; after
   * minIdleMs at the latest). Idle times are rounded down to buckets: few commands. Never throws:
   * what it cannot release stays pending and is reclaimed after minIdleMs.
   */
  async releaseAll(): Promise<void> {
    const waiting = this.parts.scheduler.takeAll();
    if (waiting.length === 0) return;
    try {
      await this.release(waiting);
    } catch (err) {
      this.context.logger.error(
        `${this.context.where}: releasing ${waiting.length} waiting retries at shutdown failed: ` +
          `${errorText(err)}; they stay pending and are reclaimed after minIdleMs`,
      );
    }
  }

  private async release(waiting: Array<{ entryId: string; dueAt: number }>): Promise<void> {
    const { stream, group, consumer, options, logger, where } = this.context;
    const { minIdleMs } = options;
    const bucket = Math.max(100, Math.ceil(minIdleMs / 20));
    const now = this.context.now();
    const byIdle = new Map<number, string[]>();
    for (const { entryId, dueAt } of waiting) {
      const idle = Math.max(0, minIdleMs - Math.max(0, dueAt - now));
      const rounded = Math.floor(idle / bucket) * bucket;
      const ids = byIdle.get(rounded);
      if (ids) ids.push(entryId);
      else byIdle.set(rounded, [entryId]);
    }
    for (const [idle, ids] of byIdle) {
      await this.parts.client.release(stream, group, consumer, ids, idle);
    }
    logger.log(`${where}: released ${waiting.length} waiting retries to peers`);
  }
}
