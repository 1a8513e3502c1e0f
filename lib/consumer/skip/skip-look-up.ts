import type { SkipQuery } from '../../redis/stream-roles';
import type { LookUpTicket, OwnRecordIndex, OwnRecords, RidingLookUp } from './skip.types';

/** What a look-up needs: the loop's own records, and an MGET for when it goes out alone. */
export interface LookUpPorts {
  readonly own: Pick<OwnRecords, 'lookUpSent' | 'lookUpAnswered' | 'missedBy'>;
  /** Reads the records of `queries` on their own (one MGET). */
  readonly alone: (queries: readonly SkipQuery[]) => Promise<Array<string | null>>;
}

/** A look-up's answer: the records Redis held, and this loop's own it may have missed. */
export interface LookUpAnswer {
  /** In the order of the queries: the branded id held, `null` for none. */
  readonly found: ReadonlyArray<string | null>;
  /** `null`: it missed none. */
  readonly own: OwnRecordIndex | null;
}

/**
 * The skip look-up of one read (docs/delivery.md "Duplicates and stale replays"). Its queries wait
 * for the loop's next XACK and are read in the same script call, after that XACK's writes (no
 * round trip of their own); read before an XACK took them, or when that XACK failed, they go out
 * on their own (one MGET). Each time it goes out is reported to {@link OwnRecords}, which keeps
 * the loop's own records it may miss until it is closed.
 */
export class RecordLookUp implements RidingLookUp {
  /** The records found, once the look-up went out. */
  private answer: Promise<ReadonlyArray<string | null>> | null = null;
  /** Resolves `answer` when it rides with an XACK. */
  private ride:
    ((found: ReadonlyArray<string | null> | PromiseLike<Array<string | null>>) => void) | null =
    null;
  /** What each time it went out was sent with (a missed ride: twice); the last one answers. */
  private readonly tickets: LookUpTicket[] = [];

  constructor(
    readonly queries: readonly SkipQuery[],
    private readonly ports: LookUpPorts,
  ) {}

  board(carried: readonly string[]): boolean {
    if (this.answer !== null) return false;
    this.tickets.push(this.ports.own.lookUpSent(carried));
    this.answer = new Promise((resolve) => (this.ride = resolve));
    return true;
  }

  answered(found: ReadonlyArray<string | null>): void {
    this.ride?.(found);
    this.ride = null;
  }

  missed(): void {
    this.ride?.(this.goAlone());
    this.ride = null;
  }

  /** The answer: sent on its own now when no XACK took it. */
  async read(): Promise<LookUpAnswer> {
    this.answer ??= this.goAlone();
    const found = await this.answer;
    const ticket = this.tickets[this.tickets.length - 1];
    return { found, own: this.ports.own.missedBy(ticket) };
  }

  /** Answered, or no longer needed: the loop keeps nothing for it any more. */
  close(): void {
    for (const ticket of this.tickets.splice(0)) this.ports.own.lookUpAnswered(ticket);
  }

  private goAlone(): Promise<Array<string | null>> {
    this.tickets.push(this.ports.own.lookUpSent([]));
    const found = this.ports.alone(this.queries);
    // read by read(); the failure of a look-up whose read is never handled is nobody's
    found.catch(() => undefined);
    return found;
  }
}
