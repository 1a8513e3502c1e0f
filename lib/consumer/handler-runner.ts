import { boundedText } from '../codec/bounded-text';
import { errorStack, errorText } from '../codec/codecs';
import { isEntryRejected } from '../errors/entry-rejected.error';
import type { BatchAcks, StreamMessage } from '../interfaces/stream-message.interface';
import type { ConsumerLogger, EntryHandler } from './consumer.types';
import { keyLanes } from './key-lanes';
import type { HeldKeys } from './held-keys';
import type { KeyRetry } from './key-retry';
import type {
  FailedEntry,
  HandleOutcome,
  HandlerErrors,
  HandlingBatch,
  HeldBatch,
  LoopContext,
  LoopCounters,
  RejectedEntry,
} from './loop.types';

/** How many last handler errors are remembered for dead letters. */
const LAST_ERRORS_KEPT = 10_000;

/**
 * Calls the user's method on the messages of one read and turns what happens into verdicts: a
 * return acks, a throw leaves the entry pending (logged with handler, stream, group and entry id,
 * counted, remembered for its dead letter). The loop never sees a handler's exception.
 */
export class HandlerRunner implements HandlerErrors {
  private readonly lastErrors = new Map<string, string>();
  private readonly concurrency: number;
  private readonly counters: LoopCounters;
  private readonly logger: ConsumerLogger;
  private readonly where: string;
  private readonly isStopping: () => boolean;
  private readonly now: () => number;

  /**
   * @param keyOf with `newerWins` or `partitions`: the key of an entry; entries of one key then
   *   run one at a time, in stream order ({@link keyLanes}).
   * @param keyRetry with `partitions`: a failed entry is retried after its delay with its key's
   *   later entries parked behind it in `heldKeys`; the batch goes on without them.
   */
  constructor(
    context: LoopContext,
    private readonly handler: EntryHandler,
    private readonly keyOf?: (message: StreamMessage<unknown>) => string | undefined,
    private readonly keyRetry?: { retry: KeyRetry; held: HeldKeys },
  ) {
    this.concurrency = context.options.concurrency;
    this.counters = context.counters;
    this.logger = context.logger;
    this.where = context.where;
    this.isStopping = () => context.isStopping();
    this.now = () => context.now();
  }

  /**
   * Handles `messages`, recording progress in `held`; entries not started at stop are reported.
   * Entries handed to a held key (partitions) are in none of the outcome's lists.
   * @param heldLane true for the run of a held key's lane (its entries are not parked again).
   */
  run(
    messages: StreamMessage<unknown>[],
    held: HandlingBatch,
    heldLane = false,
  ): Promise<HandleOutcome> {
    return this.handler.batch
      ? this.handleBatch(messages, held)
      : this.handleEach(messages, held, heldLane);
  }

  /** The last handler error this process saw for the entry, if any. */
  lastErrorOf(entryId: string): string | undefined {
    return this.lastErrors.get(entryId);
  }

  /** Forgets the errors of entries that were acked. */
  forget(entryIds: readonly string[]): void {
    if (this.lastErrors.size > 0) for (const id of entryIds) this.lastErrors.delete(id);
  }

  /**
   * Per-entry mode: up to `concurrency` handlers at once, in stream order when 1. With
   * `newerWins`, the read is split into lanes by key ({@link keyLanes}): up to `concurrency` lanes
   * at once, the entries of one lane one after another.
   */
  private async handleEach(
    messages: StreamMessage<unknown>[],
    held: HandlingBatch,
    heldLane: boolean,
  ): Promise<HandleOutcome> {
    const { handler, keyRetry } = this;
    if (handler.batch) throw new TypeError('handleEach needs a per-entry handler');
    const rejected: RejectedEntry[] = [];
    /** Entries handed to a held key (partitions): settled by its lane, not by this batch. */
    const handed = new Set<string>();
    /** The errors of the entries handed to a held key, by entry id. */
    const failures = new Map<string, unknown>();
    /** One attempt of `message`; the delay of its retry when it failed and is held, else `null`. */
    const attempt = async (message: StreamMessage<unknown>): Promise<number | null> => {
      // called inline (no async wrapper): a synchronous handler costs no promise per entry
      try {
        const result = handler.call(message);
        if (isThenable(result)) await result;
        held.ok.push(message.entryId);
        return null;
      } catch (err) {
        if (keyRetry === undefined || isEntryRejected(err)) {
          this.settleThrow(err, message, held, rejected);
          return null;
        }
        this.entryFailed(err, message);
        const delayMs = keyRetry.retry.delayOf(message, err);
        if (delayMs === null)
          held.failed.push({
            message,
            error: err,
            claimedAt: held.touchedAt,
            failedAt: this.now(),
          });
        else failures.set(message.entryId, err);
        return delayMs;
      }
    };
    const runOne = async (message: StreamMessage<unknown>): Promise<number | null> => {
      held.started.add(message.entryId);
      const delayMs = await attempt(message);
      held.unsettled.delete(message.entryId);
      return delayMs;
    };
    let unstarted: string[];
    if (this.keyOf) {
      const keyOf = this.keyOf;
      // a partitioned stream: the entries of a held key wait behind its retry (docs/partitions.md)
      const runnable = keyRetry && !heldLane ? keyRetry.held.divert(messages, keyOf) : messages;
      if (runnable !== messages) {
        const kept = new Set(runnable);
        for (const m of messages) if (!kept.has(m)) handed.add(m.entryId);
      }
      const lanes = keyLanes(runnable, keyOf);
      let nextLane = 0;
      const work = async (): Promise<void> => {
        while (nextLane < lanes.length && !this.isStopping()) {
          const lane = lanes[nextLane++];
          for (let i = 0; i < lane.length && !this.isStopping(); i++) {
            const delayMs = await runOne(lane[i]);
            if (delayMs === null || !keyRetry) continue;
            // its retry waits outside this batch, the key's later entries behind it
            const rest = lane.slice(i + 1);
            keyRetry.held.hold(
              // an entry without a key holds only itself
              keyOf(lane[i]) ?? `\u0000${lane[i].entryId}`,
              lane[i],
              failures.get(lane[i].entryId),
              delayMs,
              rest,
            );
            for (const m of [lane[i], ...rest]) {
              handed.add(m.entryId);
              held.unsettled.delete(m.entryId);
            }
            break;
          }
        }
      };
      await this.inParallel(Math.min(this.concurrency, lanes.length), work);
      unstarted = messages
        .filter((m) => !held.started.has(m.entryId) && !handed.has(m.entryId))
        .map((m) => m.entryId);
      if (handed.size > 0) for (const id of handed) held.unsettled.delete(id);
    } else if (this.concurrency <= 1) {
      // one at a time, in stream order: a synchronous handler runs in this loop without a promise
      // or a microtask hop per entry; only a handler that returns a thenable is awaited
      let next = 0;
      while (next < messages.length && !this.isStopping()) {
        const message = messages[next++];
        const { entryId } = message;
        held.started.add(entryId);
        try {
          const result = handler.call(message);
          if (isThenable(result)) await result;
          held.ok.push(entryId);
        } catch (err) {
          this.settleThrow(err, message, held, rejected);
        }
        held.unsettled.delete(entryId);
      }
      unstarted = messages.slice(next).map((m) => m.entryId);
    } else {
      let next = 0;
      const work = async (): Promise<void> => {
        while (next < messages.length && !this.isStopping()) await runOne(messages[next++]);
      };
      await Promise.all(Array.from({ length: Math.min(this.concurrency, messages.length) }, work));
      unstarted = messages.slice(next).map((m) => m.entryId);
    }
    return {
      ok: held.ok.splice(0),
      unstarted,
      failed: held.failed.splice(0),
      rejected: rejected.length > 0 ? rejected : undefined,
    };
  }

  /** `workers` copies of `work` at once (one: no Promise.all). */
  private async inParallel(workers: number, work: () => Promise<void>): Promise<void> {
    if (workers <= 1) await work();
    else await Promise.all(Array.from({ length: workers }, work));
  }

  /** A per-entry handler threw: a rejection (guard, pipe) or a failure for the retry policy. */
  private settleThrow(
    err: unknown,
    message: StreamMessage<unknown>,
    held: HandlingBatch,
    rejected: RejectedEntry[],
  ): void {
    if (isEntryRejected(err)) {
      rejected.push({
        entryId: message.entryId,
        attempts: message.attempts,
        error: boundedText(err.message),
      });
      return;
    }
    this.entryFailed(err, message);
    held.failed.push({ message, error: err, claimedAt: held.touchedAt, failedAt: this.now() });
  }

  private entryFailed(err: unknown, message: StreamMessage<unknown>): void {
    this.handlerFailed(
      err,
      `entry ${message.entryId} (id ${message.id}, attempt ${message.attempts})`,
      [message.entryId],
    );
  }

  /** Batch mode: one call per read; it returns what to ack. */
  private async handleBatch(
    messages: StreamMessage<unknown>[],
    held: HandlingBatch,
  ): Promise<HandleOutcome> {
    const { handler } = this;
    if (this.isStopping() || !handler.batch)
      return { ok: [], unstarted: messages.map((m) => m.entryId), failed: [] };
    const inBatch = new Set(messages.map((m) => m.entryId));
    for (const id of inBatch) held.started.add(id);
    let returned;
    try {
      returned = await handler.call(messages);
    } catch (err) {
      if (isEntryRejected(err)) {
        const rejected = messages.map(({ entryId, attempts }) => ({
          entryId,
          attempts,
          error: boundedText(err.message),
        }));
        return { ok: [], unstarted: [], failed: [], rejected };
      }
      this.handlerFailed(err, `a batch of ${messages.length} (${messages[0].entryId}..)`, [
        ...inBatch,
      ]);
      return {
        ok: [],
        unstarted: [],
        failed: notReturned(messages, inBatch, err, held, this.now()),
      };
    }
    if (returned === null || returned === undefined) {
      this.logger.warn(
        `${this.where}: batch handler returned nothing; acked none of ${messages.length} entries`,
      );
      return {
        ok: [],
        unstarted: [],
        failed: notReturned(messages, inBatch, undefined, held, this.now()),
      };
    }
    let ok: string[];
    try {
      ok = this.acksOf(returned, inBatch);
    } catch (err) {
      // not an iterable (`true`), or one whose items cannot be read: a failure of the whole batch
      const returnedText = `batch handler returned ${errorText(returned)}, not an iterable of messages or entry ids`;
      this.handlerFailed(
        new TypeError(`${returnedText} (${errorText(err)})`),
        `a batch of ${messages.length} (${messages[0].entryId}..)`,
        messages.map((m) => m.entryId),
      );
      const all = new Set(messages.map((m) => m.entryId));
      return { ok: [], unstarted: [], failed: notReturned(messages, all, err, held, this.now()) };
    }
    return {
      ok,
      unstarted: [],
      failed: notReturned(messages, inBatch, undefined, held, this.now()),
    };
  }

  /** The entries of the batch that `returned` acks; throws when it cannot be read as acks. */
  private acksOf(returned: NonNullable<BatchAcks>, inBatch: Set<string>): string[] {
    const ok: string[] = [];
    for (const item of returned) {
      const entryId: unknown = typeof item === 'string' ? item : item?.entryId;
      if (typeof entryId === 'string' && inBatch.delete(entryId)) ok.push(entryId);
      else
        this.logger.warn(
          `${this.where}: batch handler returned ${errorText(entryId)}, not an entry of this batch; ignored`,
        );
    }
    return ok;
  }

  private handlerFailed(err: unknown, what: string, entryIds: readonly string[]): void {
    const text = errorText(err);
    this.counters.handlerFailed(text);
    for (const id of entryIds) this.rememberError(id, text);
    this.logger.error(
      `Handler ${this.where} failed on ${what}: ${text}; left pending`,
      errorStack(err),
    );
  }

  private rememberError(entryId: string, text: string): void {
    this.lastErrors.delete(entryId);
    this.lastErrors.set(entryId, text);
    if (this.lastErrors.size > LAST_ERRORS_KEPT) {
      const oldest = this.lastErrors.keys().next().value;
      if (oldest !== undefined) this.lastErrors.delete(oldest);
    }
  }
}

/** Batch entries still in `left` (not returned for ack): each is retried on its own. */
function notReturned(
  messages: readonly StreamMessage<unknown>[],
  left: ReadonlySet<string>,
  error: unknown,
  held: HeldBatch,
  failedAt: number,
): FailedEntry[] {
  return messages
    .filter((m) => left.has(m.entryId))
    .map((message) => ({ message, error, claimedAt: held.touchedAt, failedAt }));
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as PromiseLike<unknown>).then === 'function'
  );
}
