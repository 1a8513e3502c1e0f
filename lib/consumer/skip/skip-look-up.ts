import type { SkipQuery } from '../../redis/stream-roles';
import type { LookUpTicket, OwnRecordIndex, OwnRecords } from './skip.types';

/** What a look-up needs: the loop's own records, and the MGET that reads the records. */
export interface LookUpPorts {
  readonly own: Pick<OwnRecords, 'lookUpSent' | 'lookUpAnswered' | 'missedBy'>;
  /** Reads the records of `queries` (one MGET). */
  readonly read: (queries: readonly SkipQuery[]) => Promise<Array<string | null>>;
}

/** A look-up's answer: the records Redis held, and this loop's own it may have missed. */
export interface LookUpAnswer {
  /** In the order of the queries: the branded id held, `null` for none. */
  readonly found: ReadonlyArray<string | null>;
  /** `null`: it missed none. */
  readonly own: OwnRecordIndex | null;
}

/**
 * The skip look-up of one read (docs/delivery.md "Duplicates and stale replays"): one MGET, sent
 * the moment the look-up is made. A read sent ahead is looked up as its reply is read (while the
 * batch before it is handled when its handlers await I/O; after it when they never yield, and the
 * loop then waits for the answer). Its sending is reported to {@link OwnRecords}, which keeps the
 * loop's own records it may miss (those of entries handled meanwhile) until it is closed.
 */
export class RecordLookUp {
  /** What it was sent with. */
  private readonly ticket: LookUpTicket;
  /** The records found. */
  private readonly answer: Promise<ReadonlyArray<string | null>>;
  private closed = false;

  constructor(
    queries: readonly SkipQuery[],
    private readonly ports: LookUpPorts,
  ) {
    this.ticket = ports.own.lookUpSent();
    const answer = ports.read(queries);
    // read by read(); the failure of a look-up whose read is never handled is nobody's
    answer.catch(() => undefined);
    this.answer = answer;
  }

  /** The answer, beside this loop's own records it may have missed. */
  async read(): Promise<LookUpAnswer> {
    const found = await this.answer;
    return { found, own: this.ports.own.missedBy(this.ticket) };
  }

  /** Answered, or no longer needed: the loop keeps nothing for it any more (once). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.ports.own.lookUpAnswered(this.ticket);
  }
}
