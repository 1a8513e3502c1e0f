import { ID_FIELD } from '../codec/codecs';
import { compareEntryIds, entryIdMs } from '../codec/entry-id';
import { parseDeadLetter, type ParsedDeadLetter } from '../codec/dead-letter-fields';
import {
  deadLetterScope,
  letterSource,
  redriveTarget,
  type DeadLetterScope,
  type LetterSource,
} from '../codec/dead-letter-scope';
import { partitionKeyOf } from '../codec/partition-key';
import type { DeadLetterEntry } from '../interfaces/dead-letter-entry.interface';
import { isNoPermError } from '../redis/redis-errors';
import type { RawEntry, StreamsClient } from '../redis/stream-roles';

/** Entries read from a dead-letter stream per XRANGE. */
const PAGE_SIZE = 100;

/** The commands dead letters need: read, copy back, delete, and a stream's partition count. */
export type LetterClient = Pick<StreamsClient, 'range' | 'addMany' | 'remove' | 'partitions'>;

/** What {@link DeadLetterOperations} works with. */
export interface DeadLetterOperationsContext {
  /** The app's shared client (opened on first use). */
  client(): LetterClient;
  /** Where the letters of `stream` (and `group`) are (`ConsumerRegistry.deadLetterStreamsOf`). */
  sinksOf(stream: string, group: string | undefined): string[];
  logger: { log(message: string): void; warn(message: string): void };
}

/** A letter of the asked scope, as a walk over a dead-letter stream hands it on. */
interface ScopedLetter {
  entryId: string;
  letter: ParsedDeadLetter;
  source: LetterSource;
}

type Visit = (found: ScopedLetter) => boolean | Promise<boolean>;

/**
 * Lists, redrives and deletes the dead letters of a stream (docs/dead-letters.md "Redrive, list,
 * delete") for `EchoStreamAdmin`. A partitioned stream is one stream here: asked by its own name,
 * its letters of every partition (those written with a partition's name included); asked by a
 * partition's name, those of that partition; a redriven letter goes to its key's partition
 * ({@link redriveTarget}).
 */
export class DeadLetterOperations {
  constructor(private readonly ctx: DeadLetterOperationsContext) {}

  /** Which letters `stream` names (one GET, two for a partition's name). */
  scope(stream: string): Promise<DeadLetterScope> {
    return readDeadLetterScope(this.ctx.client(), stream);
  }

  /** The dead letters of `stream` (and `group`), oldest first, at most `count`, after `after`. */
  async list(
    stream: string,
    group: string | undefined,
    count: number,
    after: string | undefined,
  ): Promise<DeadLetterEntry[]> {
    const scope = await this.scope(stream);
    const found: DeadLetterEntry[] = [];
    for (const sink of this.sinks(scope, group)) {
      const taken: DeadLetterEntry[] = [];
      await this.scan(sink, scope, group, count, after, (each) => {
        taken.push(toDeadLetterEntry(sink, scope, each));
        return taken.length < count;
      });
      found.push(...taken);
    }
    found.sort((a, b) => compareEntryIds(a.entryId, b.entryId));
    return found.slice(0, count);
  }

  /** Moves dead letters back (copy, then delete), at most `count`; returns how many moved. */
  async redrive(
    stream: string,
    group: string | undefined,
    count: number,
    entryIds: readonly string[] | undefined,
  ): Promise<number> {
    const scope = await this.scope(stream);
    let total = 0;
    for (const sink of this.sinks(scope, group)) {
      if (total >= count) break;
      const moved = await this.redriveFrom(sink, scope, group, count - total, entryIds);
      if (moved > 0) {
        const to =
          scope.partitions === null
            ? `'${stream}'`
            : `the partitions of their keys in '${scope.stream}'`;
        this.ctx.logger.log(`Redrove ${moved} dead letter(s) from '${sink}' to ${to}`);
      }
      total += moved;
    }
    return total;
  }

  /** Deletes the given letters of `stream`; returns the ids deleted. */
  async remove(stream: string, ids: readonly string[]): Promise<string[]> {
    const scope = await this.scope(stream);
    const client = this.ctx.client();
    const deleted: string[] = [];
    for (const sink of this.sinks(scope, undefined)) {
      const mine: string[] = [];
      await this.pick(sink, scope, undefined, ids, ({ entryId }) => {
        mine.push(entryId);
        return true;
      });
      if ((await client.remove(sink, mine)) > 0) deleted.push(...mine);
    }
    return deleted;
  }

  /** Where the letters of `scope` live: those of the stream's own name for a partition's. */
  private sinks(scope: DeadLetterScope, group: string | undefined): string[] {
    return this.ctx.sinksOf(scope.stream, group);
  }

  private async redriveFrom(
    sink: string,
    scope: DeadLetterScope,
    group: string | undefined,
    limit: number,
    entryIds: readonly string[] | undefined,
  ): Promise<number> {
    const client = this.ctx.client();
    let moved = 0;
    let batch: Array<{ entryId: string; stream: string; fields: readonly string[] }> = [];
    const flush = async (): Promise<void> => {
      if (batch.length === 0) return;
      const items = batch;
      batch = [];
      // copy first, then delete: a failure in between duplicates, never loses
      await client.addMany(items.map(({ stream, fields }) => ({ stream, fields })));
      await client.remove(
        sink,
        items.map((item) => item.entryId),
      );
      moved += items.length;
    };
    const visit = async ({ entryId, letter, source }: ScopedLetter): Promise<boolean> => {
      const target = redriveTarget(scope, letter, source);
      if (!target) {
        this.ctx.logger.warn(
          letter.original.length === 0
            ? `Dead letter ${entryId} in '${sink}' has no original fields; left in place`
            : `Dead letter ${entryId} in '${sink}' has no partition key and no partition of ` +
                `'${scope.stream}' (${scope.partitions} partitions); left in place`,
        );
        return true;
      }
      batch.push({ entryId, ...target });
      if (batch.length >= PAGE_SIZE) await flush();
      return moved + batch.length < limit;
    };
    if (entryIds) await this.pick(sink, scope, group, entryIds, visit);
    else await this.scan(sink, scope, group, limit, undefined, visit);
    await flush();
    return moved;
  }

  /**
   * Walks `sink` oldest first, in pages, calling `visit` for each letter of `scope` (and `group`)
   * until it returns `false` or the stream ends.
   */
  private async scan(
    sink: string,
    scope: DeadLetterScope,
    group: string | undefined,
    limit: number,
    after: string | undefined,
    visit: Visit,
  ): Promise<void> {
    if (limit <= 0) return;
    const client = this.ctx.client();
    let start = after === undefined ? '-' : `(${after}`;
    for (;;) {
      const page: RawEntry[] = await client.range(sink, start, '+', PAGE_SIZE);
      for (const entry of page) {
        const found = scoped(entry, scope, group);
        if (found && !(await visit(found))) return;
      }
      if (page.length < PAGE_SIZE) return;
      // NOTE: exclusive range start '(' needs Redis >= 6.2 (the package's minimum).
      start = `(${page[page.length - 1].entryId}`;
    }
  }

  /** As `scan`, over the given ids only (one XRANGE each; ids not in the stream are skipped). */
  private async pick(
    sink: string,
    scope: DeadLetterScope,
    group: string | undefined,
    entryIds: readonly string[],
    visit: Visit,
  ): Promise<void> {
    const client = this.ctx.client();
    for (const id of entryIds) {
      const [entry] = await client.range(sink, id, id, 1);
      const found = entry && scoped(entry, scope, group);
      if (found && !(await visit(found))) return;
    }
  }
}

/**
 * Which letters `stream` names, reading the stored partition counts it needs (one GET, two for a
 * partition's name). A count the ACL refuses to read (`NOPERM`: an operator user of an ACL
 * from before partitioned streams) reads as none: the name is then taken as a plain stream's.
 */
export function readDeadLetterScope(
  client: Pick<StreamsClient, 'partitions'>,
  stream: string,
): Promise<DeadLetterScope> {
  const leases = client.partitions;
  return deadLetterScope(
    stream,
    leases &&
      ((name) =>
        leases.storedCount(name).catch((err: unknown) => {
          if (isNoPermError(err)) return null;
          throw err;
        })),
  );
}

/** The letter of `entry` when it belongs to `scope` (and `group`). */
function scoped(
  entry: RawEntry,
  scope: DeadLetterScope,
  group: string | undefined,
): ScopedLetter | undefined {
  if (entry.fields === null) return undefined;
  const letter = parseDeadLetter(entry.fields);
  if (group !== undefined && letter.group !== group) return undefined;
  const source = letterSource(scope, letter);
  return source && { entryId: entry.entryId, letter, source };
}

/** A letter as `EchoStreamAdmin.deadLetters()` lists it. */
function toDeadLetterEntry(
  deadLetterStream: string,
  scope: DeadLetterScope,
  { entryId, letter, source }: ScopedLetter,
): DeadLetterEntry {
  const fields: Record<string, string> = {};
  for (let i = 0; i + 1 < letter.original.length; i += 2)
    fields[letter.original[i]] = letter.original[i + 1];
  const entry: DeadLetterEntry = {
    deadLetterStream,
    entryId,
    reason: letter.reason,
    stream: source.stream,
    group: letter.group ?? '',
    sourceEntryId: letter.sourceEntryId ?? '',
    attempts: letter.attempts,
    error: letter.error,
    at: new Date(letter.atMs ?? entryIdMs(entryId)),
    id: fields[ID_FIELD],
    fields,
  };
  if (scope.partitions === null) return entry;
  const key = letter.key ?? partitionKeyOf(letter.original);
  return {
    ...entry,
    ...(source.partition === undefined ? {} : { partition: source.partition }),
    ...(key === undefined ? {} : { key }),
  };
}
