import { HeldEntries } from '../health';
import type { FailedEntry, LoopContext, LoopCounters } from '../context';
import { decideRetry, type RetryDecisionContext } from './retry-decision';

export type { FailedEntry } from '../context';

/** Failures that leave the hot path now, per dead-letter reason. */
export interface FinalFailures {
  /** The handler threw a `NonRetryableError`. */
  nonRetryable: FailedEntry[];
  /** The failed attempt was the last allowed one (`attempts >= maxDeliveries`). */
  exhausted: FailedEntry[];
}

/** The few things of the loop the scheduler needs. */
export type RetrySchedulerContext = RetryDecisionContext &
  Pick<LoopContext, 'now'> & {
    /** Where `retrying` and `totalRetries` are kept. */
    readonly counters: Pick<LoopCounters, 'retryScheduled' | 'retriesWaiting'>;
  };

interface Waiting {
  entryId: string;
  dueAt: number;
}

/**
 * Decides what happens to a failed entry (dead-letter now, retry later, or leave it to the crash
 * path) and keeps the retries that wait. A waiting retry stays pending and owned by this consumer
 * in Redis (nothing is written per entry); the loop keeps its idle time low through the heartbeat
 * ({@link held}), so no peer reclaims it early, and re-claims it when {@link takeDue} hands it
 * out. In memory: a binary min-heap on the due time (stale nodes skipped lazily) and a map by id.
 */
export class RetryScheduler {
  /** The waiting retries, for the heartbeat (`XCLAIM ... JUSTID` keeps their idle time low). */
  private readonly waiting = new Map<string, Waiting>();
  readonly held = new HeldEntries(() => this.waiting.keys(), 0);
  private readonly heap: Waiting[] = [];

  constructor(private readonly context: RetrySchedulerContext) {}

  /** Entries waiting for their retry now. */
  get size(): number {
    return this.waiting.size;
  }

  /** True while `entryId` waits here: a read of the own PEL must not hand it to a handler early. */
  has(entryId: string): boolean {
    return this.waiting.has(entryId);
  }

  /**
   * Routes failures: a `NonRetryableError` or a failure on the last allowed delivery is returned
   * for the dead-letter path; the rest wait for their delay (or, with `retry: false`, are left
   * pending for the reclaim after `minIdleMs`).
   */
  route(failures: readonly FailedEntry[]): FinalFailures {
    const final: FinalFailures = { nonRetryable: [], exhausted: [] };
    for (const failure of failures) {
      const decision = decideRetry(this.context, failure.message, failure.error);
      if (decision.kind === 'non-retryable') final.nonRetryable.push(failure);
      else if (decision.kind === 'exhausted') final.exhausted.push(failure);
      else if (decision.kind === 'retry')
        this.schedule(
          failure.message.entryId,
          failure.failedAt + decision.delayMs,
          failure.claimedAt,
        );
      // 'left-pending' (`retry: false`): the reclaim after `minIdleMs` runs it again
    }
    return final;
  }

  /** When the earliest retry is due; `Infinity` when none waits. */
  nextDueAt(): number {
    this.dropStale();
    return this.heap.length > 0 ? this.heap[0].dueAt : Infinity;
  }

  /** Takes up to `limit` retries due by now, earliest first; they no longer wait here. */
  takeDue(limit: number): string[] {
    const now = this.context.now();
    const out: string[] = [];
    while (out.length < limit && this.nextDueAt() <= now) {
      const top = this.pop();
      this.forget(top.entryId);
      out.push(top.entryId);
    }
    this.updateGauge();
    return out;
  }

  /** Puts back retries taken but not started (the re-claim failed): due now, touched soon. */
  putBack(entryIds: readonly string[]): void {
    for (const entryId of entryIds) this.add(entryId, this.context.now());
    this.held.touchSoon(); // the heartbeat touches them on its next tick
    this.updateGauge();
  }

  /** Empties the scheduler (at shutdown): every waiting retry with its due time. */
  takeAll(): Array<{ entryId: string; dueAt: number }> {
    const all = [...this.waiting.values()].map(({ entryId, dueAt }) => ({ entryId, dueAt }));
    this.waiting.clear();
    this.heap.length = 0;
    this.updateGauge();
    return all;
  }

  private schedule(entryId: string, dueAt: number, claimedAt: number): void {
    const wasEmpty = this.waiting.size === 0;
    this.add(entryId, dueAt);
    // the set is touched as one: its clock is that of its least recently touched entry
    this.held.joined(claimedAt, wasEmpty);
    this.context.counters.retryScheduled();
    this.updateGauge();
  }

  private add(entryId: string, dueAt: number): void {
    const node = { entryId, dueAt };
    this.waiting.set(entryId, node);
    this.push(node);
  }

  private forget(entryId: string): void {
    this.waiting.delete(entryId);
  }

  private updateGauge(): void {
    this.context.counters.retriesWaiting(this.waiting.size);
  }

  /** Drops heap tops that no longer wait (taken at shutdown or re-scheduled). */
  private dropStale(): void {
    while (this.heap.length > 0 && this.waiting.get(this.heap[0].entryId) !== this.heap[0]) {
      this.pop();
    }
  }

  private push(node: Waiting): void {
    const heap = this.heap;
    heap.push(node);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent].dueAt <= node.dueAt) break;
      heap[i] = heap[parent];
      i = parent;
    }
    heap[i] = node;
  }

  private pop(): Waiting {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop()!;
    if (heap.length > 0) {
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= heap.length) break;
        const right = left + 1;
        const child = right < heap.length && heap[right].dueAt < heap[left].dueAt ? right : left;
        if (heap[child].dueAt >= last.dueAt) break;
        heap[i] = heap[child];
        i = child;
      }
      heap[i] = last;
    }
    return top;
  }
}
