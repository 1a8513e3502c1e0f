import { errorStack, errorText } from '../../codec/codecs';
import type { ConsumerLogger, HandlerErrors, LoopContext, LoopCounters } from '../context';

/** How many last handler errors are remembered for dead letters. */
const LAST_ERRORS_KEPT = 10_000;

/**
 * A handler's failures, whatever the strategy that ran it: counted, logged with handler, stream,
 * group and entry id, and the last error of each entry remembered for its dead letter.
 */
export class HandlerErrorLog implements HandlerErrors {
  private readonly lastErrors = new Map<string, string>();
  private readonly counters: LoopCounters;
  private readonly logger: ConsumerLogger;
  private readonly where: string;

  constructor(context: Pick<LoopContext, 'counters' | 'logger' | 'where'>) {
    this.counters = context.counters;
    this.logger = context.logger;
    this.where = context.where;
  }

  /** The last handler error this process saw for the entry, if any. */
  lastErrorOf(entryId: string): string | undefined {
    return this.lastErrors.get(entryId);
  }

  /** Forgets the errors of entries that were acked. */
  forget(entryIds: readonly string[]): void {
    if (this.lastErrors.size > 0) for (const id of entryIds) this.lastErrors.delete(id);
  }

  /** The handler threw `err` on `what` (an entry, a batch): counted, logged, remembered. */
  failed(err: unknown, what: string, entryIds: readonly string[]): void {
    const text = errorText(err);
    this.counters.handlerFailed(text);
    for (const id of entryIds) this.remember(id, text);
    this.logger.error(
      `Handler ${this.where} failed on ${what}: ${text}; left pending`,
      errorStack(err),
    );
  }

  /** A batch handler's return that is not an entry of its batch: ignored, with a warning. */
  warn(text: string): void {
    this.logger.warn(`${this.where}: ${text}`);
  }

  private remember(entryId: string, text: string): void {
    this.lastErrors.delete(entryId);
    this.lastErrors.set(entryId, text);
    if (this.lastErrors.size > LAST_ERRORS_KEPT) {
      const oldest = this.lastErrors.keys().next().value;
      if (oldest !== undefined) this.lastErrors.delete(oldest);
    }
  }
}

/** The words of a failed entry in the log: entry id, message id and attempt. */
export function entryWhat(message: { entryId: string; id: string; attempts: number }): string {
  return `entry ${message.entryId} (id ${message.id}, attempt ${message.attempts})`;
}
