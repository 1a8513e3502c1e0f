import type { DeadLetterReason } from '../../interfaces/dead-letter-message.interface';
import type { RawEntry, StreamsClient } from '../../redis/stream-roles';
import type { AckWriter } from './ack-writer';
import type { DeadLetterPath } from './dead-letter-path';
import type { Heartbeat } from '../health';
import type {
  DeadLetterCandidate,
  FailedEntry,
  HandlerErrors,
  LoopContext,
  RejectedEntry,
} from '../context';
import type { RetryScheduler } from '../retry';

/** What settling entries other than by an ack needs besides the context. */
export interface SettlementParts {
  readonly client: Pick<StreamsClient, 'range' | 'release'>;
  /** The loop's one XACK writer: a deleted entry's XACK and what goes with it. */
  readonly acks: Pick<AckWriter, 'exited'>;
  readonly deadLetters: Pick<DeadLetterPath, 'send'>;
  readonly heartbeat: Pick<Heartbeat, 'hold' | 'drop'>;
  /** Where a failure goes: the dead-letter path now, or a retry that waits (not `RetryClaims`). */
  readonly waitingRetries: Pick<RetryScheduler, 'route'>;
  readonly errors: Pick<HandlerErrors, 'lastErrorOf'>;
}

/**
 * Settles entries that do not end in a plain ack: deleted from the stream, gone from the PEL,
 * handed back uncharged, released to peers, or sent down the dead-letter path (rejected, failed
 * for good, poison, undecodable).
 */
export class Settlement {
  constructor(
    private readonly context: Pick<
      LoopContext,
      'stream' | 'group' | 'consumer' | 'where' | 'options' | 'logger' | 'counters'
    >,
    private readonly parts: SettlementParts,
  ) {}

  /** Pending entries deleted from the stream: acked and counted, nothing to handle. */
  async deleted(ids: readonly string[]): Promise<void> {
    const { where, counters, logger } = this.context;
    await this.parts.acks.exited(ids);
    counters.deleted(ids.length);
    logger.warn(
      `${where}: ${ids.length} pending entries were deleted from the stream (${ids.join(', ')}); acked, nothing to handle`,
    );
  }

  /**
   * Ids an XCLAIM did not win: a peer holds them (they still exist), or they were deleted from
   * the stream. NOTE: Redis 7's XCLAIM drops a deleted entry from the PEL without a word (6.2
   * claims it and answers nil), so only a look at the stream tells; both count as deleted.
   */
  async gone(ids: readonly string[]): Promise<void> {
    const { client } = this.parts;
    const { stream } = this.context;
    const found = await Promise.all(ids.map((id) => client.range(stream, id, id, 1)));
    const gone = ids.filter((_, i) => found[i].length === 0);
    if (gone.length > 0) await this.deleted(gone);
  }

  /**
   * Waiting retries that a drain or our own reclaim read again: that read reached no handler, so
   * it is not charged (docs/delivery.md "What counts as a delivery"); the count goes back to what
   * it was and the entries stay ours (idle 0), waiting for their time.
   */
  async uncharge(ids: readonly string[], counts: ReadonlyMap<string, number>): Promise<void> {
    const { stream, group, consumer } = this.context;
    const before = ids.map((id) => Math.max(0, (counts.get(id) ?? 1) - 1));
    await this.parts.client.release(stream, group, consumer, ids, 0, before);
  }

  /**
   * Hands entries this consumer read but never started back to peers (idle past `minIdleMs`, so
   * the next sweep of a live peer takes them) with the delivery count they had before that read:
   * a read that reached no handler is not charged. `counts` holds the counts after the read (drain,
   * reclaim); `null` for a fresh read, whose count is 1.
   */
  async release(
    ids: readonly string[],
    counts: ReadonlyMap<string, number> | null,
    what: string,
  ): Promise<void> {
    if (ids.length === 0) return;
    const { stream, group, consumer, options, logger, where } = this.context;
    const before = ids.map((id) => Math.max(0, (counts?.get(id) ?? 1) - 1));
    await this.parts.client.release(stream, group, consumer, ids, options.minIdleMs, before);
    logger.log(`${where}: released ${ids.length} ${what} entries to peers`);
  }

  /**
   * The dead-letter path, with the entries kept claimed while it runs: a `@DeadLetter` method
   * slower than `minIdleMs` must not let a peer's sweep claim the entry and dead-letter it again.
   * A candidate without an error text gets the last handler error seen for it.
   */
  async deadLetter(
    candidates: readonly DeadLetterCandidate[],
    reason: DeadLetterReason,
  ): Promise<void> {
    if (candidates.length === 0) return;
    const { heartbeat, deadLetters, errors } = this.parts;
    const letters = candidates.map((c) =>
      c.error === undefined ? { ...c, error: errors.lastErrorOf(c.entryId) } : c,
    );
    const ids = letters.map((c) => c.entryId);
    heartbeat.hold('deadLetters', () => ids);
    try {
      await deadLetters.send(letters, reason);
    } finally {
      heartbeat.drop('deadLetters');
    }
  }

  /** A guard or pipe refused these entries: retrying cannot help, so they leave at once. */
  async rejected(rejected: readonly RejectedEntry[], entries: readonly RawEntry[]): Promise<void> {
    const byId = new Map(entries.map((e) => [e.entryId, e]));
    const candidates: DeadLetterCandidate[] = [];
    for (const { entryId, attempts, error } of rejected) {
      const fields = byId.get(entryId)?.fields;
      if (fields) candidates.push({ entryId, fields, attempts, error });
    }
    await this.deadLetter(candidates, 'rejected');
  }

  /**
   * Failed entries: a `NonRetryableError` or a failure on the last allowed delivery goes to the
   * dead-letter path now; the retry scheduler keeps the rest until they are due.
   */
  async failed(failed: readonly FailedEntry[], entries: readonly RawEntry[]): Promise<void> {
    const { nonRetryable, exhausted } = this.parts.waitingRetries.route(failed);
    if (nonRetryable.length === 0 && exhausted.length === 0) return;
    const fields = new Map(entries.map((e) => [e.entryId, e.fields ?? []]));
    const dead = (list: FailedEntry[]): DeadLetterCandidate[] =>
      list.map(({ message: { entryId, attempts } }) => ({
        entryId,
        fields: fields.get(entryId) ?? [],
        attempts,
        error:
          this.parts.errors.lastErrorOf(entryId) ?? 'not returned for ack by the batch handler',
      }));
    await this.deadLetter(dead(nonRetryable), 'non_retryable');
    await this.deadLetter(dead(exhausted), 'max_deliveries');
  }
}
