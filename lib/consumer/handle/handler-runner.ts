import type { StreamMessage } from '../../interfaces/stream-message.interface';
import type {
  EntryHandler,
  HandleOutcome,
  HandlerErrors,
  HandlingBatch,
  LoopContext,
} from '../context';
import type { KeyLaneRunner } from '../order';
import type { KeyRetry } from '../retry';
import { BatchRun } from './batch-run';
import { HandlerErrorLog } from './handler-errors';
import { KeyedRun } from './keyed-run';
import { PerEntryRun } from './per-entry-run';
import { NO_RATE_LIMIT, type StartLimiter } from '../limits';

/**
 * Calls the user's method on the messages of one read and turns what happens into verdicts: a
 * return acks, a throw leaves the entry pending (logged with handler, stream, group and entry id,
 * counted, remembered for its dead letter). The loop never sees a handler's exception. One
 * strategy per handler: batch mode ({@link BatchRun}), per entry in lanes by key
 * ({@link KeyedRun}), or per entry up to `concurrency` at once ({@link PerEntryRun}).
 */
export class HandlerRunner implements HandlerErrors {
  private readonly errors: HandlerErrorLog;
  private readonly strategy:
    | { readonly batch: true; readonly run: BatchRun }
    | { readonly batch: false; readonly run: KeyedRun | PerEntryRun };
  private readonly isStopping: () => boolean;

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
    handler: EntryHandler,
    lanes?: Pick<KeyLaneRunner, 'run'>,
    keyRetry?: Pick<KeyRetry, 'delayOf'>,
    starts: Pick<StartLimiter, 'holds' | 'take' | 'refund'> = NO_RATE_LIMIT,
  ) {
    const errors = new HandlerErrorLog(context);
    const now = (): number => context.now();
    const isStopping = (): boolean => context.isStopping();
    this.errors = errors;
    this.isStopping = isStopping;
    if (handler.batch) this.strategy = { batch: true, run: new BatchRun(handler, errors, now) };
    else if (lanes)
      this.strategy = {
        batch: false,
        run: new KeyedRun(handler, lanes, { errors, keyRetry, now }),
      };
    else {
      const { concurrency } = context.options;
      const parts = { concurrency, errors, starts, isStopping, now };
      this.strategy = { batch: false, run: new PerEntryRun(handler, parts) };
    }
  }

  /**
   * Handles `messages`, recording progress in `batch`; entries not started at stop are reported.
   * Entries handed to a held key (partitions), and those left pending after a failed XACK (keyed
   * lanes: they stay pending for the own PEL drain), are in none of the outcome's lists.
   * @param heldLane true for the run of a held key's lane (its entries are not parked again).
   */
  run(
    messages: StreamMessage<unknown>[],
    batch: HandlingBatch,
    heldLane = false,
  ): Promise<HandleOutcome> {
    const { strategy } = this;
    if (!strategy.batch) return strategy.run.run(messages, batch, heldLane);
    if (this.isStopping())
      return Promise.resolve({ ok: [], unstarted: messages.map((m) => m.entryId), failed: [] });
    return strategy.run.run(messages, batch);
  }

  /** The last handler error this process saw for the entry, if any. */
  lastErrorOf(entryId: string): string | undefined {
    return this.errors.lastErrorOf(entryId);
  }

  /** Forgets the errors of entries that were acked. */
  forget(entryIds: readonly string[]): void {
    this.errors.forget(entryIds);
  }
}
