import type { SkipQuery } from '../../redis/stream-roles';

/**
 * What a skip look-up was sent with (docs/delivery.md "Duplicates and stale replays"): when, and
 * whether it can have missed a record of this loop's own.
 */
export interface LookUpTicket {
  /** Look-ups the loop sent before it, itself included. */
  readonly sent: number;
  /**
   * True when every record of this loop not surely in Redis yet was written before it was read
   * (they all rode in the XACK it rode with).
   */
  readonly complete: boolean;
  /** Entries the loop had handled when it was sent. */
  readonly handledBefore: number;
}

/** This loop's own records a look-up may have missed. */
export interface OwnRecordIndex {
  /** `dedup`: branded ids handled here. */
  readonly acked: ReadonlySet<string>;
  /** `newerWins`: the highest branded id handled here, by key. */
  readonly newest: ReadonlyMap<string, string>;
}

/**
 * A skip look-up that rides with the next XACK the loop sends: its records are read in the same
 * script call, after that XACK's writes.
 */
export interface RidingLookUp {
  /** The records it asks for. */
  readonly queries: readonly SkipQuery[];
  /**
   * The XACK of `carried` takes it now; `false`: it went out on its own already, it does not ride.
   */
  board(carried: readonly string[]): boolean;
  /** The XACK's script answered: the records found, in the order of `queries`. */
  answered(found: ReadonlyArray<string | null>): void;
  /** The XACK failed: the look-up goes out on its own. */
  missed(): void;
}

/**
 * What this loop's own records say before Redis surely holds them: a look-up sent before an
 * entry's XACK was answered may have missed its record.
 */
export interface OwnRecords {
  /**
   * A look-up goes out now, riding with the XACK of `carried` (or alone: none); the records it may
   * miss are kept until {@link lookUpAnswered}.
   */
  lookUpSent(carried: readonly string[]): LookUpTicket;
  /** The look-up of `ticket` is answered (or dropped): it needs no record kept any more. */
  lookUpAnswered(ticket: LookUpTicket): void;
  /** The records of this loop the look-up of `ticket` may have missed; `null`: none. */
  missedBy(ticket: LookUpTicket): OwnRecordIndex | null;
  /** `lookUp` rides with the loop's next XACK (one waiting before it no longer does). */
  waitForRide(lookUp: RidingLookUp): void;
  /** `lookUp` no longer waits for a ride (it was read or dropped). */
  leaveRide(lookUp: RidingLookUp): void;
}
