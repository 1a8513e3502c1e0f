import type { StreamMessage } from '../../interfaces/stream-message.interface';
import type { EntryCommit } from '../../redis/stream-roles';
import type { AttemptWrites } from '../commit';

/** The ids of one send, split: the entries to commit and those acked as usual. */
export interface CommitSplit {
  /** Handled `exactlyOnce` entries, in the order given: their writes and their delivery. */
  readonly commits: EntryCommit[];
  /** The others (skipped duplicates, deleted entries): a plain XACK. */
  readonly rest: string[];
}

/**
 * The writes of `exactlyOnce` entries whose handler returned, until their commit is settled
 * (docs/ARCHITECTURE.md "Exactly-once commits"): what the handler wrote through `m.tx` in the
 * attempt that returned, and the delivery count the entry was read with (the commit's fence
 * compares it with the PEL's; a partition's in-place retry keeps it, though `attempts` grows). The
 * ack buffer commits them in place of their XACK; an entry handled again (its commit refused as
 * invalid, read again by the drain) replaces its writes with those of the new attempt.
 */
export class CommitQueue {
  private readonly waiting = new Map<string, EntryCommit>();

  /** @param writesOf what a message's transaction collected (`undefined`: it has none). */
  constructor(
    private readonly writesOf: (message: StreamMessage<unknown>) => AttemptWrites | undefined,
  ) {}

  /** Entries whose handler returned: their writes, as they are now, wait for their commit. */
  handled(messages: readonly StreamMessage<unknown>[], okIds: readonly string[]): void {
    if (okIds.length === 0) return;
    const ok = okIds.length === messages.length ? null : new Set(okIds);
    for (const message of messages) {
      if (ok !== null && !ok.has(message.entryId)) continue;
      const returned = this.writesOf(message);
      if (returned === undefined) continue;
      // a copy: the transaction starts over at the message's next attempt
      this.waiting.set(message.entryId, {
        entryId: message.entryId,
        deliveries: returned.deliveries,
        writes: returned.writes.slice(),
      });
    }
  }

  /**
   * `entryIds` split into the commits of those handled here and the rest; `null` when none of
   * them has a commit (the usual XACK). The commits stay queued until {@link settled}.
   */
  split(entryIds: readonly string[]): CommitSplit | null {
    if (this.waiting.size === 0) return null;
    const commits: EntryCommit[] = [];
    const rest: string[] = [];
    for (const entryId of entryIds) {
      const commit = this.waiting.get(entryId);
      if (commit === undefined) rest.push(entryId);
      else commits.push(commit);
    }
    return commits.length === 0 ? null : { commits, rest };
  }

  /** Their commit was answered (committed, fenced or refused): nothing of them is kept. */
  settled(entryIds: readonly string[]): void {
    for (const entryId of entryIds) this.waiting.delete(entryId);
  }
}
