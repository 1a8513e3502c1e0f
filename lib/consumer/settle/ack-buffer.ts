import type { CommitVerdict, EntryCommit } from '../../redis/stream-roles';
import { firstFew, type HandlerErrors, type LoopContext } from '../context';
import type { LoopHealth } from '../health';
import { NO_RECORDS, type AckRecordSource } from './ack-records';
import type { AckWriter } from './ack-writer';
import type { CommitQueue } from './commit-queue';

/** Told how every XACK of the buffer ended (the order of keyed lanes waits on it). */
export interface AckWatch {
  /** The server acknowledged `ids` (its reply received). */
  acked(ids: readonly string[]): void;
  /** The XACK of `ids` failed: they are not acknowledged (the sender puts them back). */
  failed(ids: readonly string[], error: unknown): void;
}

/** What an ack carries besides the XACK and its along writes (those are the writer's). */
export interface AckWrites {
  /** `dedup` / `newerWins` records, written in the same script call as the XACK. */
  records?: Pick<AckRecordSource, 'recordsOf' | 'forget' | 'discard'>;
  /** Keyed lanes: told when an XACK's reply is in, or that it failed; absent: nobody waits. */
  watch?: AckWatch;
  /**
   * `exactlyOnce`: the writes of handled entries, committed in place of their XACK, and the
   * loop's health (a commit refused as invalid leaves its entry pending for the own PEL drain).
   */
  commits?: {
    readonly queue: Pick<CommitQueue, 'split' | 'settled'>;
    readonly health: Pick<LoopHealth, 'drainNeeded'>;
  };
}

/**
 * Entries handled and waiting for their XACK. The loop sends them with its next read (one round
 * trip for both), or before a step that reads the own PEL or may wait; acks that failed go back to
 * the front of the buffer and are sent again. In keyed lanes (partitions, `newerWins`) a key's
 * next entry waits for the XACK of the one before, so `KeyAckGate` flushes the buffer sooner when
 * a key waits (docs/partitions.md "Order").
 */
export class AckBuffer {
  private waiting: string[] = [];
  /** The XACK the loop sent ahead ({@link sendAhead}) and has not waited for; `null`: none. */
  private ahead: Promise<void> | null = null;
  /** How that XACK failed, until {@link landed} throws it. */
  private aheadFailure: { readonly error: unknown } | null = null;

  constructor(
    private readonly context: Pick<LoopContext, 'counters' | 'where' | 'logger'>,
    private readonly writer: Pick<AckWriter, 'handled' | 'committed'>,
    private readonly errors: Pick<HandlerErrors, 'forget'>,
    writes: AckWrites = {},
  ) {
    this.records = writes.records ?? NO_RECORDS;
    this.watch = writes.watch;
    this.commits = writes.commits;
  }

  private readonly records: Pick<AckRecordSource, 'recordsOf' | 'forget' | 'discard'>;
  private readonly watch: AckWatch | undefined;
  private readonly commits: AckWrites['commits'];

  /** Handled entries: acked with the next send. */
  add(entryIds: readonly string[]): void {
    for (const id of entryIds) this.waiting.push(id);
  }

  /** Takes every waiting ack (to send alongside a read). */
  take(): string[] {
    const acks = this.waiting;
    this.waiting = [];
    return acks;
  }

  /** Acks taken whose XACK failed: first in line again. */
  putBack(entryIds: string[]): void {
    this.waiting = entryIds.concat(this.waiting);
  }

  /**
   * Sends every waiting ack and lets the loop go on before the reply (docs/ARCHITECTURE.md "The
   * beat"): the loop handles the next read meanwhile and waits for this reply at its next beat
   * ({@link landed}). A keyed lane waits for its own key's ack through the watch, so no entry's
   * order depends on the loop waiting here. On failure the acks wait again, first in line.
   */
  sendAhead(): void {
    const acks = this.take();
    if (acks.length === 0) return;
    const sending = this.send(acks).catch((err: unknown) => {
      this.putBack(acks);
      this.aheadFailure ??= { error: err };
    });
    this.ahead = sending;
    void sending.then(() => {
      if (this.ahead === sending) this.ahead = null;
    });
  }

  /**
   * Waits for the XACK sent ahead; throws its failure (once: its acks wait again, first in line,
   * and go with the next send).
   */
  async landed(): Promise<void> {
    if (this.ahead !== null) await this.ahead;
    this.throwFailed();
  }

  /**
   * Throws the failure of the XACK sent ahead when it is known already (once: its acks wait again,
   * first in line): the loop backs off before it sends more.
   */
  throwFailed(): void {
    const failure = this.aheadFailure;
    this.aheadFailure = null;
    if (failure !== null) throw failure.error;
  }

  /**
   * Sends every waiting ack now, after the XACK sent ahead is answered (a step that reads the own
   * PEL next sees none of them pending); on failure they wait again and the error is thrown.
   */
  async flush(): Promise<void> {
    // the acks sent ahead that failed wait again: they go now, with the rest
    if (this.ahead !== null) await this.ahead;
    this.aheadFailure = null;
    const acks = this.take();
    if (acks.length === 0) return;
    try {
      await this.send(acks);
    } catch (err) {
      this.putBack(acks);
      throw err;
    }
  }

  /**
   * XACK of `entryIds`, with the skip records of those handled (`dedup`, `newerWins`) in the same
   * script call when there are any: counted, and their handler errors forgotten.
   */
  async send(entryIds: string[]): Promise<void> {
    const split = this.commits?.queue.split(entryIds);
    if (!split) return this.sendAcks(entryIds);
    const committed = this.sendCommits(split.commits);
    const rest = split.rest.length > 0 ? this.sendAcks(split.rest) : Promise.resolve();
    await Promise.all([committed, rest]);
  }

  private async sendAcks(entryIds: string[]): Promise<void> {
    try {
      await this.writer.handled(entryIds, this.records.recordsOf(entryIds));
    } catch (err) {
      this.watch?.failed(entryIds, err);
      throw err;
    }
    this.records.forget(entryIds);
    this.context.counters.acked(entryIds.length);
    this.errors.forget(entryIds);
    this.watch?.acked(entryIds);
  }

  /**
   * Commits `exactlyOnce` entries (docs/ARCHITECTURE.md "Exactly-once commits"): each one's
   * writes, records and XACK in one step, fenced. A committed entry counts as acked; a fenced one
   * (another consumer's now, which commits it) is settled here with nothing written; a duplicate
   * (an entry of its branded id committed before) is acked with nothing written, counted as a
   * skipped duplicate; one refused
   * as invalid (a write that could not run) stays pending, and the own PEL drain runs it again
   * (its delivery count grows to the dead-letter threshold while the write keeps failing).
   */
  private async sendCommits(commits: readonly EntryCommit[]): Promise<void> {
    const ids = commits.map((c) => c.entryId);
    let verdicts: CommitVerdict[];
    try {
      verdicts = await this.writer.committed(
        commits.map((c) => ({ ...c, records: this.records.recordsOf([c.entryId]) })),
      );
    } catch (err) {
      this.watch?.failed(ids, err);
      throw err;
    }
    this.commits?.queue.settled(ids);
    // acked: committed, or a copy of an entry committed before (its dedup record was there)
    const done: string[] = [];
    let duplicates = 0;
    const fenced: RefusedCommit[] = [];
    const invalid: RefusedCommit[] = [];
    for (const verdict of verdicts)
      if (verdict.outcome === 'committed' || verdict.outcome === 'duplicate') {
        done.push(verdict.entryId);
        if (verdict.outcome === 'duplicate') duplicates++;
      } else (verdict.outcome === 'fenced' ? fenced : invalid).push(verdict);
    this.records.forget(done);
    this.context.counters.acked(done.length);
    if (duplicates > 0) this.context.counters.skipped('duplicate', duplicates);
    const gone = done.concat(fenced.map((v) => v.entryId));
    if (fenced.length > 0) {
      this.records.discard(fenced.map((v) => v.entryId));
      this.context.counters.fenced(fenced.length);
      this.context.logger.warn(
        `${this.context.where}: the commit of ${describe(fenced)} was refused, nothing of it ` +
          `written: the entry is another consumer's now, which commits it`,
      );
    }
    this.errors.forget(gone);
    // keyed lanes: a fenced entry's key goes on here (its entry is settled for this consumer)
    this.watch?.acked(gone);
    if (invalid.length === 0) return;
    const refused = invalid.map((v) => v.entryId);
    this.records.discard(refused);
    this.context.logger.error(
      `${this.context.where}: the commit of ${describe(invalid)} was refused, nothing of it ` +
        `written; the entry stays pending and runs again from the own pending entries`,
    );
    this.commits?.health.drainNeeded();
    // keyed lanes: the key's next entry waits until the drain ran this one again
    this.watch?.failed(refused, new Error('their commit was refused: a write could not run'));
  }
}

/** A commit that wrote nothing and left its entry unacked here. */
type RefusedCommit = Extract<CommitVerdict, { why: string }>;

/** `entry <id> (<why>)`, of the first few refused commits, and how many more. */
function describe(verdicts: readonly RefusedCommit[]): string {
  return firstFew(verdicts.map((v) => `entry ${v.entryId} (${v.why})`));
}
