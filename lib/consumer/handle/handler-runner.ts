import { boundedText } from '../../codec/bounded-text';
import { errorStack, errorText } from '../../codec/codecs';
import { isEntryRejected } from '../../errors/entry-rejected.error';
import type { BatchAcks, StreamMessage } from '../../interfaces/stream-message.interface';
import type { ConsumerLogger, EntryHandler } from '../context/consumer-config';
import type { KeyLaneRunner, LaneVerdict } from '../order/key-lane-runner';
import type { KeyRetry } from '../retry/key-retry';
import { NO_RATE_LIMIT, type StartLimiter } from './rate-limiter';
import type {
  FailedEntry,
  HandleOutcome,
  HandlerErrors,
  HandlingBatch,
  HeldBatch,
  LoopContext,
  LoopCounters,
  RejectedEntry,
} from '../context/loop-context';

/** A handler called once per entry. */
type PerEntryHandler = Extract<EntryHandler, { batch: false }>;

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
   * @param lanes with `newerWins` or `partitions`: entries of one key run one at a time, in stream
   *   order, each once the XACK of the one before is in ({@link KeyLaneRunner}).
   * @param keyRetry with `partitions`: how long a failed entry waits for its retry in its key's
   *   lane (`null`: not retried in place); the batch goes on without it.
   * @param starts the loop's rate limit: an entry that begins after the window of its read's
   *   starts ended takes a start of the current one (below `concurrency`, a batch may outlast it).
   */
  constructor(
    context: LoopContext,
    private readonly handler: EntryHandler,
    private readonly lanes?: Pick<KeyLaneRunner, 'run'>,
    private readonly keyRetry?: Pick<KeyRetry, 'delayOf'>,
    private readonly starts: Pick<StartLimiter, 'holds' | 'take' | 'refund'> = NO_RATE_LIMIT,
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
   * Entries handed to a held key (partitions), and those held back after a failed XACK (keyed
   * lanes: they stay pending for the own PEL drain), are in none of the outcome's lists.
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
   * `newerWins` or `partitions`, lanes by key ({@link KeyLaneRunner}).
   */
  private async handleEach(
    messages: StreamMessage<unknown>[],
    held: HandlingBatch,
    heldLane: boolean,
  ): Promise<HandleOutcome> {
    const { handler } = this;
    if (handler.batch) throw new TypeError('handleEach needs a per-entry handler');
    const rejected: RejectedEntry[] = [];
    let unstarted: string[];
    let ackFailure: { error: unknown } | undefined;
    if (this.lanes) {
      const lanes = await this.lanes.run(
        messages,
        heldLane,
        (message) => this.startInLane(handler, message, held, rejected),
        held.startsWindow,
      );
      ackFailure = lanes.ackFailure;
      // entries handed to a held key are settled by its lane; held-back ones stay pending
      const { handed, heldBack } = lanes;
      unstarted = messages
        .filter(
          (m) => !held.started.has(m.entryId) && !handed.has(m.entryId) && !heldBack.has(m.entryId),
        )
        .map((m) => m.entryId);
      for (const id of handed) held.unsettled.delete(id);
      for (const id of heldBack) held.unsettled.delete(id);
    } else {
      // up to `concurrency` workers take the next entry in stream order (one: strictly in order)
      let next = 0;
      const { starts } = this;
      const work = async (): Promise<void> => {
        while (next < messages.length && !this.isStopping()) {
          // a start counts in the window it begins in: past the read's, it takes a current one
          if (!starts.holds(held.startsWindow)) {
            const taken = await starts.take(1);
            if (taken.count === 0) break;
            if (next >= messages.length || this.isStopping()) {
              starts.refund(1, taken.window);
              break;
            }
          }
          const running = this.runOne(handler, messages[next++], held, rejected);
          if (running !== undefined) await running;
        }
      };
      const workers = Math.min(this.concurrency, messages.length);
      if (workers <= 1) await work();
      else await Promise.all(Array.from({ length: workers }, work));
      unstarted = messages.slice(next).map((m) => m.entryId);
    }
    return {
      ok: held.ok.splice(0),
      unstarted,
      failed: held.failed.splice(0),
      rejected: rejected.length > 0 ? rejected : undefined,
      ackFailure,
    };
  }

  /**
   * One attempt of `message` outside keyed lanes: a return acks it, a throw is settled
   * ({@link settleThrow}). A synchronous handler is done when this returns (no promise, no
   * microtask hop per entry); a thenable's end is the promise returned.
   */
  private runOne(
    handler: PerEntryHandler,
    message: StreamMessage<unknown>,
    held: HandlingBatch,
    rejected: RejectedEntry[],
  ): Promise<void> | undefined {
    const { entryId } = message;
    held.started.add(entryId);
    let result: unknown;
    try {
      result = handler.call(message);
    } catch (err) {
      this.settleThrow(err, message, held, rejected);
      held.unsettled.delete(entryId);
      return undefined;
    }
    if (!isThenable(result)) {
      held.ok.push(entryId);
      held.unsettled.delete(entryId);
      return undefined;
    }
    return this.settleWhenDone(result, message, held, rejected);
  }

  /** The end of an attempt outside keyed lanes whose handler returned a thenable. */
  private async settleWhenDone(
    result: PromiseLike<unknown>,
    message: StreamMessage<unknown>,
    held: HandlingBatch,
    rejected: RejectedEntry[],
  ): Promise<void> {
    try {
      await result;
      held.ok.push(message.entryId);
    } catch (err) {
      this.settleThrow(err, message, held, rejected);
    }
    held.unsettled.delete(message.entryId);
  }

  /**
   * One attempt of `message` in a keyed lane. A return is `'ok'` (the lane hands its ack to the
   * buffer at once: the key's next entry waits for it). A throw is settled with the batch, unless
   * `keyRetry` retries it in place after a delay (its key held). A synchronous handler's verdict
   * comes back at once, without a promise or a microtask hop; only a thenable is awaited.
   */
  private startInLane(
    handler: PerEntryHandler,
    message: StreamMessage<unknown>,
    held: HandlingBatch,
    rejected: RejectedEntry[],
  ): LaneVerdict | Promise<LaneVerdict> {
    held.started.add(message.entryId);
    let result: unknown;
    try {
      result = handler.call(message);
    } catch (err) {
      held.unsettled.delete(message.entryId);
      return this.laneFailure(err, message, held, rejected);
    }
    if (!isThenable(result)) {
      held.unsettled.delete(message.entryId);
      return 'ok';
    }
    return this.awaitInLane(result, message, held, rejected);
  }

  /** The end of an attempt whose handler returned a thenable. */
  private async awaitInLane(
    result: PromiseLike<unknown>,
    message: StreamMessage<unknown>,
    held: HandlingBatch,
    rejected: RejectedEntry[],
  ): Promise<LaneVerdict> {
    try {
      await result;
      return 'ok';
    } catch (err) {
      return this.laneFailure(err, message, held, rejected);
    } finally {
      held.unsettled.delete(message.entryId);
    }
  }

  /** A keyed lane's attempt threw: settled with the batch, or retried in place after a delay. */
  private laneFailure(
    err: unknown,
    message: StreamMessage<unknown>,
    held: HandlingBatch,
    rejected: RejectedEntry[],
  ): LaneVerdict {
    if (this.keyRetry === undefined || isEntryRejected(err)) {
      this.settleThrow(err, message, held, rejected);
      return 'settled';
    }
    this.entryFailed(err, message);
    const retryInMs = this.keyRetry.delayOf(message, err);
    if (retryInMs !== null) return { retryInMs, error: err };
    held.failed.push({ message, error: err, claimedAt: held.touchedAt, failedAt: this.now() });
    return 'settled';
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
