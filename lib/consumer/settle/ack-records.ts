import type { StreamMessage } from '../../interfaces/stream-message.interface';
import type { SkipRecord } from '../../redis/stream-roles';
import {
  NEWEST_RECORD_TTL_MS,
  type SkipRules,
  type LookUpTicket,
  type OwnRecordIndex,
  type OwnRecords,
} from '../skip';

/** The records to write with entries' XACKs; the ack buffer asks it when it sends. */
export interface AckRecordSource {
  /** Entries handled: their records wait for their XACK. */
  handled(messages: readonly StreamMessage<unknown>[], okIds: readonly string[]): void;
  /** The records of `entryIds` (kept until {@link forget}: an ack that fails is sent again). */
  recordsOf(entryIds: readonly string[]): SkipRecord[];
  /** Their XACK went through: the records were written with it. */
  forget(entryIds: readonly string[]): void;
  /**
   * They will not be acked here, their records unwritten (an `exactlyOnce` commit refused): not
   * kept, so no look-up takes them for acked.
   */
  discard(entryIds: readonly string[]): void;
}

/** Without `dedup` and `newerWins`: no record, nothing kept. */
export const NO_RECORDS: AckRecordSource = {
  handled: () => undefined,
  recordsOf: () => [],
  forget: () => undefined,
  discard: () => undefined,
};

/** The records of one handled entry, and when its XACK's reply came. */
interface EntryRecords {
  /** `dedup`: its branded id. */
  readonly acked: string | undefined;
  /** `newerWins`: its key (its branded id is `id`). */
  readonly key: string | undefined;
  readonly id: string;
  /** Look-ups sent when its XACK's reply came; `-1` while it has not come. */
  confirmedAt: number;
}

/**
 * The records written with the XACK of a handled entry (docs/delivery.md "Duplicates and stale
 * replays"): with `dedup` its branded id (acked by the group, kept for the window), with
 * `newerWins` its branded id as the newest of its key (a compare-and-set on the server). Only
 * entries whose handler succeeded get records: a failure, a rejection or a dead letter writes
 * none.
 *
 * Until Redis surely holds them the records also answer for themselves ({@link OwnRecords}): a
 * look-up goes out before the XACK of the entries handled meanwhile (a read sent ahead is looked
 * up as it lands, while the batch before it is handled), so an entry's records are kept from its
 * handler's return until its XACK's reply came AND every look-up sent before that reply was
 * answered. A look-up sent while every record was confirmed, with nothing handled since, missed
 * none of them.
 */
export class AckRecords implements AckRecordSource, OwnRecords {
  /** Handled, XACK not confirmed, by entry id. */
  private readonly waiting = new Map<string, EntryRecords>();
  /** Confirmed but perhaps missed by a look-up still open; in the order of their replies. */
  private confirmed: EntryRecords[] = [];
  /** Entries handled so far. */
  private handledCount = 0;
  /** Look-ups sent so far. */
  private sent = 0;
  /** Look-ups sent and not answered yet, by their number. */
  private readonly open = new Set<number>();

  constructor(private readonly rules: SkipRules) {}

  handled(messages: readonly StreamMessage<unknown>[], okIds: readonly string[]): void {
    if (okIds.length === 0) return;
    const { dedupWindowMs, keyOf } = this.rules;
    // every entry handled (the usual batch): no set to ask
    const ok = okIds.length === messages.length ? null : new Set(okIds);
    for (const message of messages) {
      if (ok !== null && !ok.has(message.entryId)) continue;
      const acked = dedupWindowMs !== undefined ? message.id : undefined;
      const key = keyOf?.(message);
      if (acked === undefined && key === undefined) continue;
      // handled again (its XACK failed and it was read again): its records are the new ones
      this.waiting.set(message.entryId, { acked, key, id: message.id, confirmedAt: -1 });
      this.handledCount++;
    }
  }

  /**
   * The records of `entryIds`: one per branded id for `dedup`, one per key for `newerWins` (its
   * highest id: the compare-and-set of the others would change nothing).
   */
  recordsOf(entryIds: readonly string[]): SkipRecord[] {
    const records: SkipRecord[] = [];
    const { dedupWindowMs } = this.rules;
    let newest: Map<string, string> | undefined;
    for (const entryId of entryIds) {
      const own = this.waiting.get(entryId);
      if (own === undefined) continue;
      if (own.acked !== undefined && dedupWindowMs !== undefined)
        records.push({ kind: 'acked', id: own.acked, ttlMs: dedupWindowMs });
      if (own.key !== undefined) {
        newest ??= new Map();
        const before = newest.get(own.key);
        if (before === undefined || own.id > before) newest.set(own.key, own.id);
      }
    }
    if (newest)
      for (const [key, id] of newest)
        records.push({ kind: 'newest', key, id, ttlMs: NEWEST_RECORD_TTL_MS });
    return records;
  }

  forget(entryIds: readonly string[]): void {
    for (const entryId of entryIds) {
      const own = this.waiting.get(entryId);
      if (own === undefined) continue;
      this.waiting.delete(entryId);
      own.confirmedAt = this.sent;
      this.confirmed.push(own);
    }
    this.prune();
  }

  discard(entryIds: readonly string[]): void {
    for (const entryId of entryIds) this.waiting.delete(entryId);
  }

  lookUpSent(): LookUpTicket {
    this.open.add(++this.sent);
    // complete: no record of this loop waits for its XACK's reply
    return { sent: this.sent, complete: this.waiting.size === 0, handledBefore: this.handledCount };
  }

  lookUpAnswered(ticket: LookUpTicket): void {
    this.open.delete(ticket.sent);
    this.prune();
  }

  missedBy(ticket: LookUpTicket): OwnRecordIndex | null {
    if (ticket.complete && ticket.handledBefore === this.handledCount) return null;
    // every record kept: those the look-up did see are in its answer too
    const acked = new Set<string>();
    const newest = new Map<string, string>();
    const add = (own: EntryRecords): void => {
      if (own.acked !== undefined) acked.add(own.acked);
      if (own.key === undefined) return;
      const before = newest.get(own.key);
      if (before === undefined || own.id > before) newest.set(own.key, own.id);
    };
    this.waiting.forEach(add);
    this.confirmed.forEach(add);
    return { acked, newest };
  }

  /**
   * Drops the confirmed records no open look-up can have missed: a look-up sent after an XACK's
   * reply came reads what it wrote.
   */
  private prune(): void {
    if (this.confirmed.length === 0) return;
    let oldestOpen = Infinity;
    for (const sent of this.open) if (sent < oldestOpen) oldestOpen = sent;
    let kept = 0;
    // confirmedAt grows along the list: stop at the first one an open look-up may have missed
    while (kept < this.confirmed.length && this.confirmed[kept].confirmedAt < oldestOpen) kept++;
    if (kept === this.confirmed.length) this.confirmed = [];
    else if (kept > 0) this.confirmed = this.confirmed.slice(kept);
  }
}
