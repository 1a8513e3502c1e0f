import { isEntryRejected } from '../../errors/entry-rejected.error';
import type { StreamMessage } from '../../interfaces/stream-message.interface';
import type { HandleOutcome, HandlingBatch, RejectedEntry } from '../context';
import type { KeyLaneRunner, LaneVerdict } from '../order';
import type { KeyRetry } from '../retry';
import { entryWhat, type HandlerErrorLog } from './handler-errors';
import { isThenable, settleThrow, type PerEntryHandler } from './per-entry-run';

/**
 * Per-entry mode in lanes by key (`newerWins`, `partitions`): the {@link KeyLaneRunner} orders the
 * starts; this makes each attempt and turns it into a lane verdict. Entries handed to a held key
 * (partitions) and those left pending after a failed XACK are in none of the outcome's lists.
 */
export class KeyedRun {
  constructor(
    private readonly handler: PerEntryHandler,
    private readonly lanes: Pick<KeyLaneRunner, 'run'>,
    private readonly parts: {
      readonly errors: Pick<HandlerErrorLog, 'failed'>;
      /**
       * With `partitions`: how long a failed entry waits for its retry in its key's lane (`null`:
       * not retried in place); the batch goes on without it.
       */
      readonly keyRetry?: Pick<KeyRetry, 'delayOf'>;
      now(): number;
    },
  ) {}

  async run(
    messages: StreamMessage<unknown>[],
    batch: HandlingBatch,
    heldLane: boolean,
  ): Promise<HandleOutcome> {
    const rejected: RejectedEntry[] = [];
    const lanes = await this.lanes.run(
      messages,
      heldLane,
      (message) => this.start(message, batch, rejected),
      batch.startsWindow,
    );
    // entries handed to a held key are settled by its lane; those left pending stay so
    const { handed, leftPending } = lanes;
    const unstarted = messages
      .filter(
        (m) =>
          !batch.started.has(m.entryId) && !handed.has(m.entryId) && !leftPending.has(m.entryId),
      )
      .map((m) => m.entryId);
    for (const id of handed) batch.unsettled.delete(id);
    for (const id of leftPending) batch.unsettled.delete(id);
    return {
      ok: batch.ok.splice(0),
      unstarted,
      failed: batch.failed.splice(0),
      rejected: rejected.length > 0 ? rejected : undefined,
      ackFailure: lanes.ackFailure,
    };
  }

  /**
   * One attempt. A return is `'ok'` (the lane hands its ack to the buffer at once: the key's next
   * entry waits for it). A throw is settled with the batch, unless `keyRetry` retries it in place
   * after a delay (its key held). A synchronous handler's verdict comes back at once, without a
   * promise or a microtask hop; only a thenable is awaited.
   */
  private start(
    message: StreamMessage<unknown>,
    batch: HandlingBatch,
    rejected: RejectedEntry[],
  ): LaneVerdict | Promise<LaneVerdict> {
    batch.started.add(message.entryId);
    let result: unknown;
    try {
      result = this.handler.call(message);
    } catch (err) {
      batch.unsettled.delete(message.entryId);
      return this.failure(err, message, batch, rejected);
    }
    if (!isThenable(result)) {
      batch.unsettled.delete(message.entryId);
      return 'ok';
    }
    return this.awaitVerdict(result, message, batch, rejected);
  }

  /** The end of an attempt whose handler returned a thenable. */
  private async awaitVerdict(
    result: PromiseLike<unknown>,
    message: StreamMessage<unknown>,
    batch: HandlingBatch,
    rejected: RejectedEntry[],
  ): Promise<LaneVerdict> {
    try {
      await result;
      return 'ok';
    } catch (err) {
      return this.failure(err, message, batch, rejected);
    } finally {
      batch.unsettled.delete(message.entryId);
    }
  }

  /** An attempt threw: settled with the batch, or retried in place after a delay. */
  private failure(
    err: unknown,
    message: StreamMessage<unknown>,
    batch: HandlingBatch,
    rejected: RejectedEntry[],
  ): LaneVerdict {
    const { keyRetry, errors } = this.parts;
    if (keyRetry === undefined || isEntryRejected(err)) {
      settleThrow(this.parts, err, message, batch, rejected);
      return 'settled';
    }
    errors.failed(err, entryWhat(message), [message.entryId]);
    const retryInMs = keyRetry.delayOf(message, err);
    if (retryInMs !== null) return { retryInMs, error: err };
    batch.failed.push({
      message,
      error: err,
      claimedAt: batch.touchedAt,
      failedAt: this.parts.now(),
    });
    return 'settled';
  }
}
