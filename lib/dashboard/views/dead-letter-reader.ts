import { entryIdMs, compareEntryIds } from '../../codec/entry-id';
import { parseDeadLetter } from '../../codec/dead-letter-fields';
import { letterSource, type DeadLetterScope } from '../../codec/dead-letter-scope';
import { partitionKeyOf } from '../../codec/partition-key';
import type { RawEntry, StreamQueries } from '../../redis/stream-roles';
import type { DeadLetterView } from './dashboard-views';
import { cutText, MAX_NAME_CHARS, MAX_VALUE_CHARS, PageBudget, previewFields } from './page-budget';

/** Letters per XRANGE: few, as one letter may carry megabytes (its fields, its error). */
const LETTERS_PER_READ = 10;

/**
 * One page of a stream's dead letters, oldest first, read from its dead-letter streams a few
 * letters at a time and turned into bounded views at once (long values cut and marked), so a
 * page holds at most `count` letters and 1 MiB of JSON, and the app never holds more than a few
 * raw letters of each dead-letter stream at a time (internal).
 */
export async function readDeadLetterPage(
  client: Pick<StreamQueries, 'range'>,
  deadLetterStreams: readonly string[],
  scope: DeadLetterScope,
  count: number,
  after: string | undefined,
): Promise<{ entries: DeadLetterView[]; next: string | null }> {
  const perSink = await Promise.all(
    deadLetterStreams.map((sink) => readSink(client, sink, scope, count, after)),
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
  scope: DeadLetterScope,
  count: number,
  after: string | undefined,
): Promise<PageBudget<DeadLetterView>> {
  const page = new PageBudget<DeadLetterView>(count);
  let start = after === undefined ? '-' : `(${after}`;
  while (!page.done) {
    const batch: RawEntry[] = await client.range(sink, start, '+', LETTERS_PER_READ);
    for (const entry of batch) {
      const view = entry.fields === null ? undefined : toView(sink, scope, entry);
      if (view !== undefined && !page.add(view)) break;
    }
    if (batch.length < LETTERS_PER_READ) break;
    start = `(${batch[batch.length - 1].entryId}`;
  }
  return page;
}

/** A letter as the page shows it; `undefined` when it belongs to another source stream. */
function toView(sink: string, scope: DeadLetterScope, entry: RawEntry): DeadLetterView | undefined {
  const letter = parseDeadLetter(entry.fields ?? []);
  const source = letterSource(scope, letter);
  if (!source) return undefined;
  const short = (text: string | undefined) => cutText(text ?? '', MAX_NAME_CHARS);
  const reason = short(letter.reason);
  const group = short(letter.group);
  const sourceEntryId = short(letter.sourceEntryId);
  const rawKey =
    scope.partitions === null ? undefined : (letter.key ?? partitionKeyOf(letter.original));
  const key = rawKey === undefined ? undefined : short(rawKey);
  const error = letter.error ? cutText(letter.error, MAX_VALUE_CHARS) : undefined;
  const preview = previewFields(letter.original);
  return {
    entryId: entry.entryId,
    deadLetterStream: sink,
    reason: reason.text,
    error: error?.text ?? null,
    group: group.text,
    sourceEntryId: sourceEntryId.text,
    partition: scope.partitions === null ? null : (source.partition ?? null),
    key: key?.text ?? null,
    attempts: letter.attempts,
    at: new Date(letter.atMs ?? entryIdMs(entry.entryId)).toISOString(),
    preview: preview.text,
    cut:
      [reason, group, sourceEntryId, preview].some((t) => t.cut) ||
      error?.cut === true ||
      key?.cut === true,
  };
}
