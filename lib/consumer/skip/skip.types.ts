/**
 * What a skip look-up was sent with (docs/delivery.md "Duplicates and stale replays"): when, and
 * whether it can have missed a record of this loop's own.
 */
export interface LookUpTicket {
  /** Look-ups the loop sent before it, itself included. */
  readonly sent: number;
  /** True when every record of this loop was surely in Redis when it was sent. */
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
 * What this loop's own records say before Redis surely holds them: a look-up sent before an
 * entry's XACK was answered may have missed its record.
 */
export interface OwnRecords {
  /** A look-up goes out now; the records it may miss are kept until {@link lookUpAnswered}. */
  lookUpSent(): LookUpTicket;
  /** The look-up of `ticket` is answered (or dropped): it needs no record kept any more. */
  lookUpAnswered(ticket: LookUpTicket): void;
  /** The records of this loop the look-up of `ticket` may have missed; `null`: none. */
  missedBy(ticket: LookUpTicket): OwnRecordIndex | null;
}
