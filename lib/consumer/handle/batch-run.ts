import { boundedText } from '../../codec/bounded-text';
import { errorText } from '../../codec/codecs';
import { isEntryRejected } from '../../errors/entry-rejected.error';
import type { BatchAcks, StreamMessage } from '../../interfaces/stream-message.interface';
import type {
  EntryHandler,
  FailedEntry,
  HandleOutcome,
  HandlingBatch,
  ClaimedBatch,
} from '../context';
import type { HandlerErrorLog } from './handler-errors';

/** A handler called once per read with all its messages. */
type BatchHandler = Extract<EntryHandler, { batch: true }>;

/**
 * Batch mode (`batch: true`): one call per read; it returns what to ack (messages or entry ids).
 * What it does not return is a failure of each entry on its own; a refusal (guard, pipe) refuses
 * them all; a return that cannot be read as acks fails the whole batch.
 */
export class BatchRun {
  constructor(
    private readonly handler: BatchHandler,
    private readonly errors: Pick<HandlerErrorLog, 'failed' | 'warn'>,
    private readonly now: () => number,
  ) {}

  async run(messages: StreamMessage<unknown>[], batch: HandlingBatch): Promise<HandleOutcome> {
    const inBatch = new Set(messages.map((m) => m.entryId));
    for (const id of inBatch) batch.started.add(id);
    const what = `a batch of ${messages.length} (${messages[0].entryId}..)`;
    let returned;
    try {
      returned = await this.handler.call(messages);
    } catch (err) {
      if (isEntryRejected(err)) {
        const rejected = messages.map(({ entryId, attempts }) => ({
          entryId,
          attempts,
          error: boundedText(err.message),
        }));
        return { ok: [], unstarted: [], failed: [], rejected };
      }
      this.errors.failed(err, what, [...inBatch]);
      return {
        ok: [],
        unstarted: [],
        failed: notReturned(messages, inBatch, err, batch, this.now()),
      };
    }
    if (returned === null || returned === undefined) {
      this.errors.warn(`batch handler returned nothing; acked none of ${messages.length} entries`);
      return {
        ok: [],
        unstarted: [],
        failed: notReturned(messages, inBatch, undefined, batch, this.now()),
      };
    }
    let ok: string[];
    try {
      ok = this.acksOf(returned, inBatch);
    } catch (err) {
      // not an iterable (`true`), or one whose items cannot be read: a failure of the whole batch
      const returnedText = `batch handler returned ${errorText(returned)}, not an iterable of messages or entry ids`;
      this.errors.failed(
        new TypeError(`${returnedText} (${errorText(err)})`),
        what,
        messages.map((m) => m.entryId),
      );
      const all = new Set(messages.map((m) => m.entryId));
      return { ok: [], unstarted: [], failed: notReturned(messages, all, err, batch, this.now()) };
    }
    return {
      ok,
      unstarted: [],
      failed: notReturned(messages, inBatch, undefined, batch, this.now()),
    };
  }

  /** The entries of the batch that `returned` acks; throws when it cannot be read as acks. */
  private acksOf(returned: NonNullable<BatchAcks>, inBatch: Set<string>): string[] {
    const ok: string[] = [];
    for (const item of returned) {
      const entryId: unknown = typeof item === 'string' ? item : item?.entryId;
      if (typeof entryId === 'string' && inBatch.delete(entryId)) ok.push(entryId);
      else
        this.errors.warn(
          `batch handler returned ${errorText(entryId)}, not an entry of this batch; ignored`,
        );
    }
    return ok;
  }
}

/** Batch entries still in `left` (not returned for ack): each is retried on its own. */
function notReturned(
  messages: readonly StreamMessage<unknown>[],
  left: ReadonlySet<string>,
  error: unknown,
  batch: ClaimedBatch,
  failedAt: number,
): FailedEntry[] {
  return messages
    .filter((m) => left.has(m.entryId))
    .map((message) => ({ message, error, claimedAt: batch.touchedAt, failedAt }));
}
