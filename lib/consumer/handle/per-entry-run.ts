import { boundedText } from '../../codec/bounded-text';
import { isEntryRejected } from '../../errors/entry-rejected.error';
import type { StreamMessage } from '../../interfaces/stream-message.interface';
import type { EntryHandler, HandleOutcome, HandlingBatch, RejectedEntry } from '../context';
import { entryWhat, type HandlerErrorLog } from './handler-errors';
import { takeOneStart, type StartLimiter } from '../limits';

/** A handler called once per entry. */
export type PerEntryHandler = Extract<EntryHandler, { batch: false }>;

/**
 * Per-entry mode without keys: up to `concurrency` workers take the next entry in stream order
 * (one worker: strictly in order, one at a time). A return acks the entry, a throw is settled
 * ({@link settleThrow}); a stop leaves the rest unstarted.
 */
export class PerEntryRun {
  constructor(
    private readonly handler: PerEntryHandler,
    private readonly parts: {
      readonly concurrency: number;
      readonly errors: Pick<HandlerErrorLog, 'failed'>;
      /** An entry that begins after the window of its read's starts takes a current one. */
      readonly starts: Pick<StartLimiter, 'holds' | 'take' | 'refund'>;
      isStopping(): boolean;
      now(): number;
    },
  ) {}

  async run(messages: StreamMessage<unknown>[], batch: HandlingBatch): Promise<HandleOutcome> {
    const rejected: RejectedEntry[] = [];
    const { starts, concurrency } = this.parts;
    let next = 0;
    const work = async (): Promise<void> => {
      while (next < messages.length && !this.parts.isStopping()) {
        // a start counts in the window it begins in: past the read's, it takes a current one
        if (
          !starts.holds(batch.startsWindow) &&
          !(await takeOneStart(starts, () => next < messages.length && !this.parts.isStopping()))
        )
          break;
        const running = this.runOne(messages[next++], batch, rejected);
        if (running !== undefined) await running;
      }
    };
    const workers = Math.min(concurrency, messages.length);
    if (workers <= 1) await work();
    else await Promise.all(Array.from({ length: workers }, work));
    return {
      ok: batch.ok.splice(0),
      unstarted: messages.slice(next).map((m) => m.entryId),
      failed: batch.failed.splice(0),
      rejected: rejected.length > 0 ? rejected : undefined,
    };
  }

  /**
   * One attempt: a synchronous handler is done when this returns (no promise, no microtask hop
   * per entry); a thenable's end is the promise returned.
   */
  private runOne(
    message: StreamMessage<unknown>,
    batch: HandlingBatch,
    rejected: RejectedEntry[],
  ): Promise<void> | undefined {
    const { entryId } = message;
    batch.started.add(entryId);
    let result: unknown;
    try {
      result = this.handler.call(message);
    } catch (err) {
      settleThrow(this.parts, err, message, batch, rejected);
      batch.unsettled.delete(entryId);
      return undefined;
    }
    if (!isThenable(result)) {
      batch.ok.push(entryId);
      batch.unsettled.delete(entryId);
      return undefined;
    }
    return this.settleWhenDone(result, message, batch, rejected);
  }

  /** The end of an attempt whose handler returned a thenable. */
  private async settleWhenDone(
    result: PromiseLike<unknown>,
    message: StreamMessage<unknown>,
    batch: HandlingBatch,
    rejected: RejectedEntry[],
  ): Promise<void> {
    try {
      await result;
      batch.ok.push(message.entryId);
    } catch (err) {
      settleThrow(this.parts, err, message, batch, rejected);
    }
    batch.unsettled.delete(message.entryId);
  }
}

/**
 * A per-entry handler threw: a refusal (guard, pipe: `EntryRejectedError`) is dead-lettered with
 * the batch, anything else is a failure for the retry policy (counted, logged, remembered).
 */
export function settleThrow(
  parts: { readonly errors: Pick<HandlerErrorLog, 'failed'>; now(): number },
  err: unknown,
  message: StreamMessage<unknown>,
  batch: HandlingBatch,
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
  parts.errors.failed(err, entryWhat(message), [message.entryId]);
  batch.failed.push({ message, error: err, claimedAt: batch.touchedAt, failedAt: parts.now() });
}

/** True for a handler's promise (or any thenable it returned). */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as PromiseLike<unknown>).then === 'function'
  );
}
