import { ID_FIELD } from '../codec/codecs';
import { entryIdMs } from '../codec/entry-id';
import type { DeadLetterEntry } from '../interfaces/dead-letter-entry.interface';

// How a dead-letter stream entry reads: the `dlq_*` fields of the dead-letter path
// (docs/dead-letters.md "The dead-letter stream") beside the original fields.

/** Prefix of the fields the dead-letter path adds to a copied entry (reserved). */
const DLQ_PREFIX = 'dlq_';
/** A dead letter split into the path's `dlq_*` fields and the original fields. */
export interface ParsedLetter {
  meta: Map<string, string>;
  original: string[];
}

export function parseLetter(flat: readonly string[]): ParsedLetter {
  const meta = new Map<string, string>();
  const original: string[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    if (flat[i].startsWith(DLQ_PREFIX)) meta.set(flat[i], flat[i + 1]);
    else original.push(flat[i], flat[i + 1]);
  }
  return { meta, original };
}

export function toEntry(
  deadLetterStream: string,
  stream: string,
  entryId: string,
  letter: ParsedLetter,
): DeadLetterEntry {
  const { meta } = letter;
  const fields: Record<string, string> = {};
  for (let i = 0; i + 1 < letter.original.length; i += 2) {
    fields[letter.original[i]] = letter.original[i + 1];
  }
  const attempts = Number(meta.get('dlq_attempts'));
  const at = Date.parse(meta.get('dlq_at') ?? '');
  return {
    deadLetterStream,
    entryId,
    reason: meta.get('dlq_reason') ?? '',
    stream: meta.get('dlq_stream') ?? stream,
    group: meta.get('dlq_group') ?? '',
    sourceEntryId: meta.get('dlq_entry_id') ?? '',
    attempts: Number.isFinite(attempts) ? attempts : 0,
    error: meta.get('dlq_error') || undefined,
    at: new Date(Number.isNaN(at) ? entryIdMs(entryId) : at),
    id: fields[ID_FIELD],
    fields,
  };
}
