import type { DeadLetterReason } from '../interfaces/dead-letter-message.interface';
import { partitionIndexOf } from './partition-key';

/**
 * The dead-letter wire format in one place (docs/dead-letters.md "The dead-letter stream"): the
 * name of a stream's dead-letter stream, the `dlq_*` fields the dead-letter path appends to the
 * copy of an entry, and how every reader (admin, stats, dashboard, CLI) splits a letter back into
 * those fields and the entry's original ones.
 */

/** Prefix of the fields the dead-letter path appends to a copied entry (reserved). */
export const DEAD_LETTER_FIELD_PREFIX = 'dlq_';

/**
 * The default dead-letter stream of `stream`: `<stream>:dlq`. A partitioned stream has one, named
 * after the stream itself, never one per partition (docs/partitions.md "Dead letters").
 */
export function deadLetterStreamOf(stream: string): string {
  return `${stream}:dlq`;
}

/** What the dead-letter path records about an entry it copies. */
export interface DeadLetterStamp {
  reason: DeadLetterReason;
  /** The source stream: a partitioned stream's own name, not its partition's. */
  stream: string;
  group: string;
  /** The entry id in the stream it was read from (the partition's, on a partitioned stream). */
  entryId: string;
  attempts: number;
  error: string | undefined;
  at: Date;
  /** The partition it was read from, on a partitioned stream. */
  partition?: number;
  /** Its partition key (its `pkey` field), on a partitioned stream. */
  key?: string;
}

/**
 * The `dlq_*` fields of a letter, in the order they follow the original fields: `dlq_reason`,
 * `dlq_stream`, `dlq_group`, `dlq_entry_id`, `dlq_attempts`, `dlq_error`, `dlq_at`, and on a
 * partitioned stream `dlq_partition` and `dlq_key` (the latter when the entry has a key).
 */
export function deadLetterFields(stamp: DeadLetterStamp): string[] {
  const fields = [
    'dlq_reason',
    stamp.reason,
    'dlq_stream',
    stamp.stream,
    'dlq_group',
    stamp.group,
    'dlq_entry_id',
    stamp.entryId,
    'dlq_attempts',
    String(stamp.attempts),
    'dlq_error',
    stamp.error ?? '',
    'dlq_at',
    stamp.at.toISOString(),
  ];
  if (stamp.partition !== undefined) fields.push('dlq_partition', String(stamp.partition));
  if (stamp.key !== undefined) fields.push('dlq_key', stamp.key);
  return fields;
}

/**
 * A letter read back. A field the letter lacks (a letter of an older version, or one written by
 * hand) is `undefined`, except `reason` (`''`) and `attempts` (0).
 */
export interface ParsedDeadLetter {
  /** `dlq_reason`; `''` when absent. */
  reason: string;
  /**
   * `dlq_stream` as written: the source stream, or for a letter written before partitioned
   * streams had one dead-letter stream, the partition's stream (`<stream>:p:<i>`).
   */
  stream: string | undefined;
  /** `dlq_group`. */
  group: string | undefined;
  /** `dlq_entry_id`. */
  sourceEntryId: string | undefined;
  /** `dlq_attempts`; 0 when absent or not a number. */
  attempts: number;
  /** `dlq_error`; `undefined` when absent or empty. */
  error: string | undefined;
  /** `dlq_at` in ms; `undefined` when absent or not a date. */
  atMs: number | undefined;
  /** `dlq_partition`; `undefined` when absent or not a partition index. */
  partition: number | undefined;
  /** `dlq_key`. */
  key: string | undefined;
  /** The original fields, flat and in order, without any `dlq_*` field. */
  original: string[];
}

/** Splits a letter's flat field list into its `dlq_*` fields and the original ones. */
export function parseDeadLetter(flat: readonly string[]): ParsedDeadLetter {
  const meta = new Map<string, string>();
  const original: string[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    if (flat[i].startsWith(DEAD_LETTER_FIELD_PREFIX)) meta.set(flat[i], flat[i + 1]);
    else original.push(flat[i], flat[i + 1]);
  }
  const attempts = Number(meta.get('dlq_attempts'));
  const atMs = Date.parse(meta.get('dlq_at') ?? '');
  return {
    reason: meta.get('dlq_reason') ?? '',
    stream: meta.get('dlq_stream'),
    group: meta.get('dlq_group'),
    sourceEntryId: meta.get('dlq_entry_id'),
    attempts: Number.isFinite(attempts) ? attempts : 0,
    error: meta.get('dlq_error') || undefined,
    atMs: Number.isNaN(atMs) ? undefined : atMs,
    partition: partitionIndexOf(meta.get('dlq_partition')),
    key: meta.get('dlq_key'),
    original,
  };
}
