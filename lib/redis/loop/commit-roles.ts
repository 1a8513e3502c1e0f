/**
 * What the loop may ask of Redis about exactly-once entries (docs/ARCHITECTURE.md "Exactly-once
 * commits"): a leaf of types, as stream-roles.ts.
 */
import type { AlongAck, SkipRecord } from './ack-roles';
/** One write of an exactly-once entry, committed with its XACK or not at all. */
export type CommitWrite =
  /** XADD `key` * with `fields` (field, value, ...: at least one pair). */
  | { readonly op: 'xadd'; readonly key: string; readonly fields: readonly string[] }
  /** SET `key` `value`, with PX `pxMs` when given (a positive integer). */
  | { readonly op: 'set'; readonly key: string; readonly value: string; readonly pxMs?: number }
  /** INCRBY `key` `by` (an integer of at most `COMMIT_COUNTER_LIMIT`, entry-commit.script.ts). */
  | { readonly op: 'incrBy'; readonly key: string; readonly by: number }
  /** HSET `key` `field` `value`. */
  | { readonly op: 'hset'; readonly key: string; readonly field: string; readonly value: string }
  /** DEL `key`. */
  | { readonly op: 'del'; readonly key: string };

/** An entry to commit: its writes, and the delivery its handler saw. */
export interface EntryCommit {
  readonly entryId: string;
  /** The delivery count the handler saw: a reclaim or a read since moves it and fences the commit. */
  readonly deliveries: number;
  readonly writes: readonly CommitWrite[];
  /**
   * Its `dedup` / `newerWins` records, written after its writes and before its XACK (a
   * newest-id record as a compare-and-set); none when absent.
   */
  readonly records?: readonly SkipRecord[];
}

/** What became of one entry's commit. */
export type CommitVerdict =
  /** Its writes are done and it is acked. */
  | { readonly entryId: string; readonly outcome: 'committed' }
  /**
   * Its `dedup` record was there (an entry of the same branded id committed before, a copy
   * another consumer handled at the same time): nothing written, acked.
   */
  | { readonly entryId: string; readonly outcome: 'duplicate' }
  /**
   * Nothing written, not acked: `fenced`, it is no longer this consumer's delivery (`why`: not
   * pending, owned by another consumer, delivered again); `invalid`, a write could not run (`why`
   * names it), so none ran.
   */
  | { readonly entryId: string; readonly outcome: 'fenced' | 'invalid'; readonly why: string };

/** An exactly-once entry's writes and its XACK in one atomic step, fenced (`RedisEntryCommits`). */
export interface EntryCommits {
  /** True on a Redis Cluster: every key a commit writes must be in its stream's hash slot. */
  readonly cluster: boolean;
  /**
   * Commits `entries` of `stream` for `consumer` of `group`, in the order given (each sees the
   * writes of those before it), in one round trip: one verdict per entry, in that order.
   * `along`: writes about the entries sent right behind it (their checkpoints dropped), as with
   * an XACK.
   * @throws TypeError for a malformed write (nothing is sent).
   */
  commit(
    stream: string,
    group: string,
    consumer: string,
    entries: readonly EntryCommit[],
    along?: readonly AlongAck[],
  ): Promise<CommitVerdict[]>;
}
