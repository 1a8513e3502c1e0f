import { compareEntryIds } from '../codec/entry-id';
import type { LifecycleClient } from '../redis/operator';
import type { RawEntry } from '../redis/stream-roles';

/** An item of one of the streams a {@link MergedPages} reads, with the index of its stream. */
export interface PartItem<T> {
  /** The index of the item's stream in the list given to the merge. */
  readonly part: number;
  readonly entry: T;
}

/** An entry of one of the streams a {@link MergedRange} reads, with the index of its stream. */
export type PartEntry = PartItem<RawEntry>;

/** What a {@link MergedPages} reads, and in which order. */
export interface MergedPagesSpec<T extends { readonly entryId: string }> {
  /**
   * One page of one stream, in the merge's order: the items from `from` towards `to` (both
   * inclusive, or `(id` exclusive, as XRANGE / XREVRANGE / XPENDING take them), at most `count`.
   */
  read(stream: string, from: string, to: string, count: number): Promise<T[]>;
  readonly streams: readonly string[];
  /** Where each stream's read starts, by index (`-` / `+`, an id, or `(id`). */
  readonly from: readonly string[];
  /** Where every stream's read ends. */
  readonly to: string;
  /** Items per step in all: each stream's page is its share (at least 10). */
  readonly pageSize: number;
  /** Newest first (each `read` is newest first too); oldest first when absent. */
  readonly newestFirst?: boolean;
}

/**
 * Reads several streams (a partitioned stream's partitions) as one list of items with entry ids
 * (entries, PEL rows), oldest first or newest first: items in entry-id order, an id found in two
 * streams in the order of the streams (reversed newest first). Each stream is read a page at a
 * time from where it was left (an exclusive cursor), and a step hands on only the items known to
 * be in order: those up to the least advanced last id of the pages of streams not read to their
 * end. Memory holds one page per stream at most (internal).
 */
export class MergedPages<T extends { readonly entryId: string }> {
  private readonly buffers: T[][];
  private readonly cursors: string[];
  private readonly ended: boolean[];
  private readonly perPage: number;
  /** Negative when id `a` comes before id `b` in the merge's order. */
  private readonly before: (a: string, b: string) => number;

  constructor(private readonly spec: MergedPagesSpec<T>) {
    const { streams } = spec;
    this.buffers = streams.map(() => []);
    this.cursors = [...spec.from];
    this.ended = streams.map(() => false);
    this.perPage = Math.max(10, Math.ceil(spec.pageSize / Math.max(1, streams.length)));
    this.before = spec.newestFirst
      ? (a, b) => compareEntryIds(b, a)
      : (a, b) => compareEntryIds(a, b);
  }

  /** The next items in order; empty once every stream was read to its end. */
  async next(): Promise<Array<PartItem<T>>> {
    const { spec } = this;
    await Promise.all(
      spec.streams.map(async (stream, i) => {
        if (this.ended[i] || this.buffers[i].length > 0) return;
        const page = await spec.read(stream, this.cursors[i], spec.to, this.perPage);
        this.buffers[i] = page;
        if (page.length < this.perPage) this.ended[i] = true;
        // NOTE: exclusive range bounds '(' need Redis >= 6.2 (the package's minimum).
        if (page.length > 0) this.cursors[i] = `(${page[page.length - 1].entryId}`;
      }),
    );
    // a stream not read to its end may hold items after its page that come before another's
    let bound: string | undefined;
    this.buffers.forEach((buffer, i) => {
      const last = buffer.at(-1)?.entryId;
      if (!this.ended[i] && last !== undefined && (!bound || this.before(last, bound) < 0))
        bound = last;
    });
    const out: Array<PartItem<T>> = [];
    this.buffers.forEach((buffer, part) => {
      let taken = 0;
      while (taken < buffer.length && (!bound || this.before(buffer[taken].entryId, bound) <= 0))
        out.push({ part, entry: buffer[taken++] });
      buffer.splice(0, taken);
    });
    const partOrder = spec.newestFirst ? -1 : 1;
    return out.sort(
      (a, b) => this.before(a.entry.entryId, b.entry.entryId) || (a.part - b.part) * partOrder,
    );
  }
}

/**
 * The entries of several streams between two ids, oldest first ({@link MergedPages} over
 * XRANGE): history and retention of a partitioned stream (internal).
 */
export class MergedRange extends MergedPages<RawEntry> {
  /**
   * @param start the first id (inclusive, as XRANGE takes it: `-`, `ms-seq`).
   * @param end the last id (inclusive, or `+`).
   * @param pageSize entries per step in all: each stream's page is its share (at least 10).
   */
  constructor(
    client: Pick<LifecycleClient, 'range'>,
    streams: readonly string[],
    start: string,
    end: string,
    pageSize: number,
  ) {
    super({
      read: (stream, from, to, count) => client.range(stream, from, to, count),
      streams,
      from: streams.map(() => start),
      to: end,
      pageSize,
    });
  }
}
