import type { StreamsClient } from '../../redis/stream-roles';
import type { AckBuffer, Settlement } from '../settle';
import { type Delivery, deliveryCounts } from '../handle';
import type { KeyAckGate } from '../order';
import type { DeadLetterCandidate, LoopContext } from '../context';
import type { StartLimiter } from '../limits';

/** What reading pending entries needs besides the context. */
export interface PelSweepParts {
  readonly client: Pick<
    StreamsClient,
    'readGroup' | 'pending' | 'pendingCount' | 'claim' | 'autoClaim'
  >;
  readonly delivery: Pick<Delivery, 'process'>;
  readonly acks: Pick<AckBuffer, 'flush'>;
  readonly settlement: Pick<Settlement, 'deleted' | 'gone' | 'deadLetter'>;
  readonly limiter: Pick<StartLimiter, 'take' | 'refund'>;
  /** Keyed lanes: starts blocked by a failed XACK open again when the drain begins. */
  readonly keyAcks?: Pick<KeyAckGate, 'reopen'>;
}

/**
 * The loop's reads of pending entries: its own PEL after a start or a lost reply
 * ({@link drainOwn}), and the sweep for dead peers' work ({@link sweep}): poison pills first, then
 * XAUTOCLAIM of idle entries. What it reads goes to the same delivery as a new read.
 */
export class PelSweep {
  constructor(
    private readonly context: Pick<
      LoopContext,
      'stream' | 'group' | 'consumer' | 'options' | 'isStopping'
    >,
    private readonly parts: PelSweepParts,
  ) {}

  /**
   * Reads the own PEL from 0 to its end, settling each entry: a restart recovers its held work.
   * The loop sends its pending acks first, so entries left pending after a failed XACK run from
   * here, in stream order.
   */
  async drainOwn(): Promise<void> {
    const { client, limiter, delivery, acks } = this.parts;
    const { stream, group, consumer, options } = this.context;
    this.parts.keyAcks?.reopen();
    let cursor = '0';
    while (!this.context.isStopping()) {
      const { count, window } = await limiter.take(options.batchSize);
      if (count === 0) return; // stopping
      const entries = await client.readGroup(stream, group, consumer, count, cursor);
      limiter.refund(count - entries.length, window);
      if (entries.length === 0) return;
      cursor = entries[entries.length - 1].entryId;
      await delivery.process(entries, await deliveryCounts(this.context, client, entries), window);
      await acks.flush();
    }
  }

  /**
   * Looks for work of dead peers: poison pills first, then XAUTOCLAIM of idle entries. A group
   * whose PEL is empty costs one XPENDING summary (its pace: `SweepPace`). Returns how many
   * entries the PEL held.
   */
  async sweep(): Promise<number> {
    const { stream, group } = this.context;
    const pending = await this.parts.client.pendingCount(stream, group);
    if (pending > 0 && (await this.sweepPoison())) await this.reclaim();
    return pending;
  }

  /**
   * Pages through the group's PEL (idle entries only) and dead-letters those delivered
   * `maxDeliveries` times. Claiming first makes one consumer the only one that dead-letters it.
   * Returns whether any entry was idle past `minIdleMs` (else XAUTOCLAIM would find nothing).
   */
  private async sweepPoison(): Promise<boolean> {
    const { client, settlement } = this.parts;
    const { stream, group, consumer } = this.context;
    const { minIdleMs, batchSize, maxDeliveries, maxClaimPasses } = this.context.options;
    let start = '-';
    for (let pages = 1; !this.context.isStopping(); pages++) {
      const rows = await client.pending(stream, group, {
        minIdleMs,
        start,
        end: '+',
        count: batchSize,
      });
      if (pages === 1 && rows.length === 0) return false;
      const poison = rows.filter((row) => row.deliveries >= maxDeliveries);
      if (poison.length > 0) {
        const ids = poison.map((row) => row.entryId);
        const won = await client.claim(stream, group, consumer, minIdleMs, ids);
        const deliveries = new Map(poison.map((row) => [row.entryId, row.deliveries]));
        const candidates: DeadLetterCandidate[] = [];
        const wonIds = new Set<string>();
        for (const { entryId, fields } of won) {
          if (fields === null) continue;
          wonIds.add(entryId);
          const attempts = deliveries.get(entryId) ?? maxDeliveries;
          candidates.push({ entryId, fields, attempts, error: undefined });
        }
        const lost = ids.filter((id) => !wonIds.has(id));
        if (lost.length > 0) await settlement.gone(lost);
        await settlement.deadLetter(candidates, 'max_deliveries');
      }
      if (rows.length < batchSize || (maxClaimPasses !== null && pages >= maxClaimPasses))
        return true;
      start = `(${rows[rows.length - 1].entryId}`;
    }
    return true;
  }

  /** XAUTOCLAIM cursor loop: takes over entries idle past `minIdleMs`, from any consumer. */
  private async reclaim(): Promise<void> {
    const { client, limiter, settlement, delivery, acks } = this.parts;
    const { stream, group, consumer } = this.context;
    const { minIdleMs, batchSize, maxClaimPasses } = this.context.options;
    let cursor = '0-0';
    for (let passes = 1; !this.context.isStopping(); passes++) {
      const { count, window } = await limiter.take(batchSize);
      if (count === 0) return; // stopping
      const page = await client.autoClaim(stream, group, consumer, minIdleMs, cursor, count);
      limiter.refund(count - page.entries.length, window);
      if (page.deletedIds.length > 0) await settlement.deleted(page.deletedIds);
      if (page.entries.length > 0) {
        await delivery.process(
          page.entries,
          await deliveryCounts(this.context, client, page.entries),
          window,
        );
        await acks.flush();
      }
      const stalled =
        page.cursor === cursor && page.entries.length === 0 && page.deletedIds.length === 0;
      if (page.cursor === '0-0' || stalled) return;
      if (maxClaimPasses !== null && passes >= maxClaimPasses) return;
      cursor = page.cursor;
    }
  }
}
