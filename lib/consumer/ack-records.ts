import type { StreamMessage } from '../interfaces/stream-message.interface';
import type { SkipRecord } from '../redis/stream-roles';
import { NEWEST_RECORD_TTL_MS, type SkipRules } from './skip-rules';

/** The records to write with entries' XACKs; the ack buffer asks it when it sends. */
export interface AckRecordSource {
  /** Entries handled: their records wait for their XACK. */
  handled(messages: readonly StreamMessage<unknown>[], okIds: readonly string[]): void;
  /** The records of `entryIds` (kept until {@link forget}: an ack that fails is sent again). */
  recordsOf(entryIds: readonly string[]): SkipRecord[];
  /** Their XACK went through: the records were written with it. */
  forget(entryIds: readonly string[]): void;
}

/** Without `dedup` and `newerWins`: no record, nothing kept. */
export const NO_RECORDS: AckRecordSource = {
  handled: () => undefined,
  recordsOf: () => [],
  forget: () => undefined,
};

/**
 * The records written with the XACK of a handled entry (docs/delivery.md "Duplicates and stale
 * replays"): with `dedup` its branded id (acked by the group, kept for the window), with
 * `newerWins` its branded id as the newest of its key (a compare-and-set on the server). Only
 * entries whose handler succeeded get records: a failure, a rejection or a dead letter writes
 * none.
 */
export class AckRecords implements AckRecordSource {
  private readonly waiting = new Map<string, SkipRecord[]>();

  constructor(private readonly rules: SkipRules) {}

  handled(messages: readonly StreamMessage<unknown>[], okIds: readonly string[]): void {
    if (okIds.length === 0) return;
    const ok = new Set(okIds);
    for (const message of messages) {
      if (!ok.has(message.entryId)) continue;
      const records: SkipRecord[] = [];
      const { dedupWindowMs, keyOf } = this.rules;
      if (dedupWindowMs !== undefined) {
        records.push({ kind: 'acked', id: message.id, ttlMs: dedupWindowMs });
      }
      const key = keyOf?.(message);
      if (key !== undefined) {
        records.push({ kind: 'newest', key, id: message.id, ttlMs: NEWEST_RECORD_TTL_MS });
      }
      if (records.length > 0) this.waiting.set(message.entryId, records);
    }
  }

  recordsOf(entryIds: readonly string[]): SkipRecord[] {
    const records: SkipRecord[] = [];
    for (const id of entryIds) {
      const own = this.waiting.get(id);
      if (own) records.push(...own);
    }
    return records;
  }

  forget(entryIds: readonly string[]): void {
    for (const id of entryIds) this.waiting.delete(id);
  }
}
