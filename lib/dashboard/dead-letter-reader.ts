import { entryIdMs, compareEntryIds } from '../codec/entry-id';
import type { RawEntry, StreamQueries } from '../redis/stream-roles';
import type { DeadLetterView } from './dashboard-views';
import { cutText, MAX_NAME_CHARS, MAX_VALUE_CHARS, PageBudget, previewFields } from './page-budget';

/** Letters per XRANGE: few, as one letter may carry megabytes (its fields, its error). */
const LETTERS_PER_READ = 10;

/** Prefix of the fields the engine adds to a dead letter (lib/consumer/dead-letter-path.ts). */
const DLQ_PREFIX = 'dlq_';

/**
 * One page of a stream's dead letters, oldest first, read from its dead-letter streams a few
 * letters at a time and turned into bounded views at once (long values cut and marked), so a
 * page holds at most `count` letters and 1 MiB of JSON, and the app never holds more than a few
 * raw letters of each dead-letter stream at a time (internal).
 */
export async function readDeadLetterPage(
  client: Pick<StreamQueries, 'range'>,
  deadLetterStreams: readonly string[],
  stream: string,
  count: number,
  after: string | undefined,
): Promise<{ entries: DeadLetterView[]; next: string | null }> {
  const perSink = await Promise.all(
    deadLetterStreams.map((sink) => readSink(client, sink, stream, count, after)),
  );
  // a sink whose page filled up may hold more letters before another sink's last one: the
  // merged page stops at the earliest such end, so the next page misses none
  const ends = perSink.filter((page) => page.done && page.entries.length > 0);
  const end = ends
    .map((page) => page.entries[page.entries.length - 1].entryId)
    .sort(compareEntryIds)[0];
  const merged = perSink
    .flatMap((page) => page.entries)
    .filter((view) => end === undefined || compareEntryIds(view.entryId, end) <= 0)
    .sort((a, b) => compareEntryIds(a.entryId, b.entryId));
  const page = new PageBudget<DeadLetterView>(count);
  for (const view of merged) if (!page.add(view)) break;
  const next = page.next ?? (end !== undefined ? (page.entries.at(-1)?.entryId ?? null) : null);
  return { entries: page.entries, next };
}

async function readSink(
  client: Pick<StreamQueries, 'range'>,
  sink: string,
  stream: string,
  count: number,
  after: string | undefined,
): Promise<PageBudget<DeadLetterView>> {
  const page = new PageBudget<DeadLetterView>(count);
  let start = after === undefined ? '-' : `(${after}`;
  while (!page.done) {
    const batch: RawEntry[] = await client.range(sink, start, '+', LETTERS_PER_READ);
    for (const entry of batch) {
      const view = entry.fields === null ? undefined : toView(sink, stream, entry);
      if (view !== undefined && !page.add(view)) break;
    }
    if (batch.length < LETTERS_PER_READ) break;
    start = `(${batch[batch.length - 1].entryId}`;
  }
  return page;
}

/** A letter as the page shows it; `undefined` when it belongs to another source stream. */
function toView(sink: string, stream: string, entry: RawEntry): DeadLetterView | undefined {
  const meta = new Map<string, string>();
  const original: string[] = [];
  const fields = entry.fields ?? [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i].startsWith(DLQ_PREFIX)) meta.set(fields[i], fields[i + 1]);
    else original.push(fields[i], fields[i + 1]);
  }
  const source = meta.get('dlq_stream');
  if (source !== undefined && source !== stream) return undefined;
  const short = (name: string) => cutText(meta.get(name) ?? '', MAX_NAME_CHARS);
  const reason = short('dlq_reason');
  const group = short('dlq_group');
  const sourceEntryId = short('dlq_entry_id');
  const rawError = meta.get('dlq_error');
  const error = rawError ? cutText(rawError, MAX_VALUE_CHARS) : undefined;
  const preview = previewFields(original);
  const attempts = Number(meta.get('dlq_attempts'));
  const at = Date.parse(meta.get('dlq_at') ?? '');
  return {
    entryId: entry.entryId,
    deadLetterStream: sink,
    reason: reason.text,
    error: error?.text ?? null,
    group: group.text,
    sourceEntryId: sourceEntryId.text,
    attempts: Number.isFinite(attempts) ? attempts : 0,
    at: new Date(Number.isNaN(at) ? entryIdMs(entry.entryId) : at).toISOString(),
    preview: preview.text,
    cut: [reason, group, sourceEntryId, preview].some((t) => t.cut) || error?.cut === true,
  };
}
