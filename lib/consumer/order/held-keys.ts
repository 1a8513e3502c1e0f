import type { StreamMessage } from '../../interfaces/stream-message.interface';
import type { RawEntry } from '../../redis/stream-roles';
import { sleep, type LoopContext } from '../context';

/** A held key's lane: the attempt that waits for its delay, then the key's entries behind it. */
interface HeldLane {
  /** The next attempt of the failed entry (`attempts` + 1), or `null` once it ran. */
  retry: StreamMessage<unknown> | null;
  /** The failed attempt and its error (settled as a failure when the loop stops first). */
  failed: { message: StreamMessage<unknown>; error: unknown } | null;
  dueAt: number;
  /** The key's later entries, in stream order. */
  queue: StreamMessage<unknown>[];
  /** The entries of the run in a handler now. */
  running: readonly string[];
}

/** What a held key's lane needs of the loop. */
export interface HeldKeysPorts {
  /** Runs `messages` (one key, in stream order) through the handler and settles them. */
  run(
    messages: StreamMessage<unknown>[],
    entries: readonly RawEntry[],
    counts: ReadonlyMap<string, number>,
  ): Promise<void>;
  /**
   * The loop stops while a lane waits: the failed attempt is settled as a failure (it waits as a
   * retry, released with the others), the entries behind it are released uncharged.
   */
  stopped(
    failed: { message: StreamMessage<unknown>; error: unknown; entry: RawEntry } | null,
    parked: readonly string[],
    counts: ReadonlyMap<string, number>,
  ): Promise<void>;
  /** True while the group is paused (as last read): a lane starts nothing meanwhile. */
  isPaused(): boolean;
}

/**
 * The keys of a partition loop whose entry failed and waits for its retry (docs/partitions.md
 * "Order"): the failed entry leaves the batch in hand, which settles and lets the loop read on;
 * the later entries of its key (of this read and of the next ones) are parked behind it in stream
 * order and run once its retry settled. Other keys never wait for it. The held entries stay
 * pending and owned here (the heartbeat keeps them, {@link ids}); a stop settles a waiting retry
 * as a failure and releases the parked entries uncharged; a crash leaves them in the PEL for the
 * partition's next owner, which runs them in stream order.
 */
export class HeldKeys {
  private readonly lanes = new Map<string, HeldLane>();
  private readonly drives = new Set<Promise<void>>();
  /** The raw entry and delivery count of every held entry (fields for a dead letter). */
  private readonly origin = new Map<string, { entry: RawEntry; count: number }>();
  private read: { entries: readonly RawEntry[]; counts: ReadonlyMap<string, number> | null } = {
    entries: [],
    counts: null,
  };

  constructor(
    private readonly context: Pick<
      LoopContext,
      'options' | 'isStopping' | 'signal' | 'logger' | 'where' | 'now' | 'counters'
    >,
    private readonly ports: HeldKeysPorts,
  ) {}

  /** The read being handled (where a held entry's fields and delivery count are found). */
  reading(entries: readonly RawEntry[], counts: ReadonlyMap<string, number> | null): void {
    this.read = { entries, counts };
  }

  /** True when `key` has a failed entry whose retry has not settled. */
  holds(key: string): boolean {
    return this.lanes.has(key);
  }

  /** Every held entry: waiting retries, parked entries, the run in a handler (for the heartbeat). */
  *ids(): Iterable<string> {
    for (const lane of this.lanes.values()) {
      if (lane.retry) yield lane.retry.entryId;
      for (const message of lane.queue) yield message.entryId;
      yield* lane.running;
    }
  }

  /**
   * The messages of a fresh batch that may run now: those of a held key are parked behind it (in
   * order), and an entry already held here is dropped (a redelivery of what the lane will run).
   */
  divert(
    messages: StreamMessage<unknown>[],
    keyOf: (m: StreamMessage<unknown>) => string | undefined,
  ): StreamMessage<unknown>[] {
    if (this.lanes.size === 0) return messages;
    // the same array when nothing is held back (the caller tells by identity)
    const held = new Set(this.ids());
    const runnable = messages.filter((message) => {
      if (held.has(message.entryId)) return false;
      const key = keyOf(message);
      const lane = key === undefined ? undefined : this.lanes.get(key);
      if (!lane) return true;
      this.adopt([message]);
      lane.queue.push(message);
      return false;
    });
    return runnable.length === messages.length ? messages : runnable;
  }

  /**
   * `message` of `key` failed and is retried after `delayMs`; `rest` (the key's later entries of
   * the same run, in order) waits behind it, before what was parked already.
   */
  hold(
    key: string,
    message: StreamMessage<unknown>,
    error: unknown,
    delayMs: number,
    rest: readonly StreamMessage<unknown>[],
  ): void {
    this.adopt([message, ...rest]);
    this.context.counters.retryScheduled();
    const retry = { ...message, attempts: message.attempts + 1 };
    const dueAt = this.context.now() + delayMs;
    const lane = this.lanes.get(key);
    if (lane) {
      Object.assign(lane, { retry, failed: { message, error }, dueAt });
      lane.queue = [...rest, ...lane.queue];
      this.countWaiting();
      return;
    }
    const opened: HeldLane = {
      retry,
      failed: { message, error },
      dueAt,
      queue: [...rest],
      running: [],
    };
    this.lanes.set(key, opened);
    this.countWaiting();
    const drive = this.drive(key, opened);
    this.drives.add(drive);
    void drive.finally(() => this.drives.delete(drive));
  }

  /** Settles once every lane ended (at stop: its retry settled as a failure, the rest released). */
  async idle(): Promise<void> {
    while (this.drives.size > 0) await Promise.all([...this.drives]);
  }

  private adopt(messages: readonly StreamMessage<unknown>[]): void {
    const { entries, counts } = this.read;
    for (const { entryId } of messages) {
      if (this.origin.has(entryId)) continue;
      const entry = entries.find((e) => e.entryId === entryId) ?? { entryId, fields: [] };
      this.origin.set(entryId, { entry, count: counts?.get(entryId) ?? 1 });
    }
  }

  private async drive(key: string, lane: HeldLane): Promise<void> {
    const { context } = this;
    try {
      while (!context.isStopping()) {
        if (lane.retry) await sleep(Math.max(0, lane.dueAt - context.now()), context.signal);
        while (this.ports.isPaused() && !context.isStopping())
          await sleep(context.options.claimIntervalMs, context.signal);
        if (context.isStopping()) break;
        const run = lane.retry ? [lane.retry, ...lane.queue] : lane.queue;
        lane.retry = null;
        lane.failed = null;
        lane.queue = [];
        this.countWaiting();
        if (run.length === 0) break;
        lane.running = run.map((m) => m.entryId);
        const { entries, counts } = this.originOf(run);
        try {
          await this.ports.run(run, entries, counts);
        } catch (err) {
          // a connection failure: the entries stay pending in our PEL (its drain reads them again)
          context.logger.error(
            `${context.where}: the held entries of key ${key} could not be settled: ${String(err)}; left pending`,
          );
        }
        lane.running = [];
        for (const { entryId } of run)
          if (!this.isQueued(lane, entryId)) this.origin.delete(entryId);
        if (!lane.retry && lane.queue.length === 0) break;
      }
      if (context.isStopping()) await this.stopLane(lane);
    } finally {
      this.lanes.delete(key);
      this.countWaiting();
    }
  }

  /** `retrying` in the loop's stats: the retries of held keys that wait for their delay. */
  private countWaiting(): void {
    let waiting = 0;
    for (const lane of this.lanes.values()) if (lane.retry) waiting++;
    this.context.counters.heldRetriesWaiting(waiting);
  }

  private async stopLane(lane: HeldLane): Promise<void> {
    const parked = lane.queue.map((m) => m.entryId);
    const { counts } = this.originOf(lane.queue);
    const failed = lane.failed && {
      ...lane.failed,
      entry: this.origin.get(lane.failed.message.entryId)?.entry ?? {
        entryId: lane.failed.message.entryId,
        fields: [],
      },
    };
    if (failed)
      counts.set(failed.message.entryId, this.origin.get(failed.message.entryId)?.count ?? 1);
    try {
      await this.ports.stopped(failed, parked, counts);
    } catch (err) {
      this.context.logger.error(
        `${this.context.where}: held entries not settled at stop: ${String(err)}; they stay pending`,
      );
    }
    lane.queue = [];
    lane.retry = null;
  }

  private isQueued(lane: HeldLane, id: string): boolean {
    return lane.retry?.entryId === id || lane.queue.some((m) => m.entryId === id);
  }

  private originOf(messages: readonly StreamMessage<unknown>[]): {
    entries: RawEntry[];
    counts: Map<string, number>;
  } {
    const entries: RawEntry[] = [];
    const counts = new Map<string, number>();
    for (const { entryId } of messages) {
      const origin = this.origin.get(entryId);
      entries.push(origin?.entry ?? { entryId, fields: [] });
      counts.set(entryId, origin?.count ?? 1);
    }
    return { entries, counts };
  }
}
