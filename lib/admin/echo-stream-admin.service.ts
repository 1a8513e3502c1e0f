import { Injectable, Logger, Optional } from '@nestjs/common';
import { resolveCodec } from '../codec/codecs';
import { EchoStreamConnections } from '../runtime/echo-stream.connections';
import { EchoStreamLifecycle } from '../runtime/echo-stream.lifecycle';
import { EchoStreamOrchestrator } from '../runtime/echo-stream.orchestrator';
import { ConsumerRegistry } from '../runtime/echo-stream.registry';
import type {
  DeadLetterEntry,
  DeadLetterQueryOptions,
  RedriveOptions,
} from '../interfaces/dead-letter-entry.interface';
import type { HistoryEntry, HistoryOptions } from '../interfaces/lifecycle.interface';
import { historyWindow, readHistory } from '../lifecycle/history-reader';
import { compareEntryIds } from '../codec/entry-id';
import { checkArgs, checkEntryIds, checkGroupArgs } from './admin-args';
import { parseLetter, toEntry, type ParsedLetter } from './dead-letter-fields';
import type { RawEntry } from '../redis/stream-roles';

/** Entries read from a dead-letter stream per XRANGE. */
const PAGE_SIZE = 100;
/** Default `count` of `deadLetters()`. */
const DEFAULT_LIST_COUNT = 100;

/**
 * Operations on dead letters and on the loops: list and redrive dead letters, and start/stop
 * the loops by hand (with `autoStart: false`).
 *
 * The dead-letter stream(s) of a source stream are the `deadLetterStream` of this app's loops on
 * that stream (and group, when given), else `${stream}:dlq`. A dead-letter stream shared by
 * several source streams is fine: only letters whose `dlq_stream` is the given stream are touched.
 */
@Injectable()
export class EchoStreamAdmin {
  private readonly logger = new Logger(EchoStreamAdmin.name);

  constructor(
    private readonly connections: EchoStreamConnections,
    private readonly registry: ConsumerRegistry,
    private readonly orchestrator: EchoStreamOrchestrator,
    @Optional() private readonly lifecycle?: EchoStreamLifecycle,
  ) {}

  /**
   * Reads `stream` as it was: the entries between `from` and `to` (each a `Date` or an entry id,
   * both inclusive), oldest first, at most `count`, one XRANGE page at a time as you iterate
   * (constant memory, whatever the length). Payloads are decoded with `options.codec`, else the
   * codec of this app's handler of the stream, else the module default; an entry the codec cannot
   * decode comes with `payload: undefined` and `decodeError`. Raw `fields` are always there.
   * @throws TypeError (when iteration starts, nothing read) on a bad bound or count, or `from` after `to`.
   *
   * @example
   * ```ts
   * for await (const entry of admin.history<Order>('orders', { from: new Date(Date.now() - 3_600_000) })) { ... }
   * ```
   */
  async *history<T = unknown>(
    stream: string,
    options: HistoryOptions = {},
  ): AsyncGenerator<HistoryEntry<T>, void, undefined> {
    const window = historyWindow(stream, options);
    const codec =
      options.codec !== undefined
        ? resolveCodec(options.codec)
        : (this.lifecycle?.codecFor(stream) ?? resolveCodec('json'));
    yield* readHistory<T>(this.connections.client.lifecycle(), stream, window, codec);
  }

  /** Starts the handler loops (for `autoStart: false`); idempotent. */
  start(): void {
    this.orchestrator.start();
  }

  /**
   * Stops the handler loops (as on shutdown: in-flight handlers get `shutdownTimeoutMs`). Calls
   * while a stop is in flight, `app.close()`'s included, share it: each settles once every loop is down.
   */
  stop(): Promise<void> {
    return this.orchestrator.stop();
  }

  /**
   * Pauses `group` on `stream` for every process (docs/operations.md "Pausing a group"): within
   * `claimIntervalMs` each loop of that group on that stream stops reading, sweeping and claiming
   * (entries in hand finish, waiting retries keep waiting, nothing is released), and shows
   * `paused` in `ConsumerStats`. Persistent: a key in Redis, in the stream's hash slot, that
   * stays until {@link resume}, across restarts. Pausing a paused group changes nothing.
   * @throws TypeError (as a rejection, nothing done) on a bad argument.
   */
  async pause(stream: string, group: string): Promise<void> {
    checkGroupArgs('pause', stream, group);
    if (!(await this.isPaused(stream, group)))
      await this.connections.client.pauses.pause(stream, group, Date.now());
    this.logger.log(`Paused group ${stream}/${group}`);
  }

  /**
   * Resumes `group` on `stream`: its loops read again within `claimIntervalMs`.
   * @returns `false` when it was not paused.
   * @throws TypeError (as a rejection, nothing done) on a bad argument.
   */
  async resume(stream: string, group: string): Promise<boolean> {
    checkGroupArgs('resume', stream, group);
    const was = await this.connections.client.pauses.resume(stream, group);
    if (was) this.logger.log(`Resumed group ${stream}/${group}`);
    return was;
  }

  /**
   * Whether `group` is paused on `stream` (one GET; what every loop of it reads within
   * `claimIntervalMs`).
   * @throws TypeError (as a rejection) on a bad argument.
   */
  async isPaused(stream: string, group: string): Promise<boolean> {
    return (await this.pausedSince(stream, group)) !== null;
  }

  /**
   * Since when `group` is paused on `stream`; `null` when it is not.
   * @throws TypeError (as a rejection) on a bad argument.
   */
  async pausedSince(stream: string, group: string): Promise<Date | null> {
    checkGroupArgs('pausedSince', stream, group);
    const [since] = await this.connections.client.pauses.pausedSince([{ stream, group }]);
    return since === null || since === undefined ? null : new Date(since);
  }

  /**
   * Re-publishes dead letters of `stream` to it, oldest first: each is appended (XADD) with its
   * original fields (the branded `id` field kept, so consumers can dedup) minus every `dlq_*`
   * field, THEN deleted (XDEL) from the dead-letter stream. Copy before delete: a crash between the
   * two leaves a duplicate, never a loss. Redriven entries are new entries to every group.
   * @param options.group only letters whose `dlq_group` is this group.
   * @param options.count at most this many (default: all).
   * @param options.entryIds only these dead letters (their ids in the dead-letter stream).
   * @returns how many dead letters were redriven.
   * @throws TypeError (as a rejection, nothing done) on a bad argument.
   */
  async redrive(stream: string, options: RedriveOptions = {}): Promise<number> {
    const { group, count } = checkArgs('redrive', stream, options, undefined);
    const entryIds = checkEntryIds('redrive', options.entryIds);
    let total = 0;
    for (const deadLetterStream of this.deadLetterStreams(stream, group)) {
      if (total >= count) break;
      const moved = await this.redriveFrom(
        deadLetterStream,
        stream,
        group,
        count - total,
        entryIds,
      );
      if (moved > 0) {
        this.logger.log(
          `Redrove ${moved} dead letter(s) from '${deadLetterStream}' to '${stream}'`,
        );
      }
      total += moved;
    }
    return total;
  }

  /**
   * Lists dead letters of `stream`, oldest first, without changing anything.
   * @param options.group only letters whose `dlq_group` is this group.
   * @param options.count at most this many (default 100).
   * @param options.after only letters after this dead-letter entry id (the next page).
   * @throws TypeError (as a rejection) on a bad argument.
   */
  async deadLetters(
    stream: string,
    options: DeadLetterQueryOptions = {},
  ): Promise<DeadLetterEntry[]> {
    const { group, count } = checkArgs('deadLetters', stream, options, DEFAULT_LIST_COUNT);
    const after = checkEntryIds('deadLetters', options.after === undefined ? [] : [options.after]);
    const found: DeadLetterEntry[] = [];
    for (const deadLetterStream of this.deadLetterStreams(stream, group)) {
      const taken: DeadLetterEntry[] = [];
      const visit = (entryId: string, letter: ParsedLetter): boolean => {
        taken.push(toEntry(deadLetterStream, stream, entryId, letter));
        return taken.length < count;
      };
      await this.scan(deadLetterStream, stream, group, count, visit, after?.[0]);
      found.push(...taken);
    }
    found.sort((a, b) => compareEntryIds(a.entryId, b.entryId));
    return found.slice(0, count);
  }

  /**
   * Deletes the given dead letters of `stream` (ids in its dead-letter stream(s)); ids that are
   * not a dead letter of `stream` are left alone.
   * @returns the ids actually deleted.
   * @throws TypeError (as a rejection, nothing done) on a bad argument.
   */
  async deleteDeadLetters(stream: string, entryIds: readonly string[]): Promise<string[]> {
    checkArgs('deleteDeadLetters', stream, {}, undefined);
    const ids = checkEntryIds('deleteDeadLetters', entryIds) ?? [];
    const client = this.connections.client;
    const deleted: string[] = [];
    for (const deadLetterStream of this.deadLetterStreams(stream, undefined)) {
      const mine: string[] = [];
      await this.pick(deadLetterStream, stream, undefined, ids, (entryId) => {
        mine.push(entryId);
        return true;
      });
      if ((await client.remove(deadLetterStream, mine)) > 0) deleted.push(...mine);
    }
    if (deleted.length > 0) {
      this.logger.log(`Deleted ${deleted.length} dead letter(s) of '${stream}'`);
    }
    return deleted;
  }

  /** Where the dead letters of `stream` (and `group`) live; the default when no loop says. */
  private deadLetterStreams(stream: string, group: string | undefined): string[] {
    const streams = new Set<string>();
    for (const loop of this.registry.list()) {
      if (loop.stream !== stream || (group !== undefined && loop.group !== group)) continue;
      if (loop.deadLetterStream !== false) streams.add(loop.deadLetterStream);
    }
    if (streams.size === 0) streams.add(`${stream}:dlq`);
    return [...streams];
  }

  private async redriveFrom(
    deadLetterStream: string,
    stream: string,
    group: string | undefined,
    limit: number,
    entryIds: readonly string[] | undefined,
  ): Promise<number> {
    const client = this.connections.client;
    let moved = 0;
    let batch: Array<{ entryId: string; fields: string[] }> = [];
    const flush = async (): Promise<void> => {
      if (batch.length === 0) return;
      const items = batch;
      batch = [];
      // copy first, then delete: a failure in between duplicates, never loses
      await client.addMany(items.map((item) => ({ stream, fields: item.fields })));
      await client.remove(
        deadLetterStream,
        items.map((item) => item.entryId),
      );
      moved += items.length;
    };
    const visit = async (entryId: string, letter: ParsedLetter): Promise<boolean> => {
      if (letter.original.length === 0) {
        this.logger.warn(
          `Dead letter ${entryId} in '${deadLetterStream}' has no original fields; left in place`,
        );
        return true;
      }
      batch.push({ entryId, fields: letter.original });
      if (batch.length >= PAGE_SIZE) await flush();
      return moved + batch.length < limit;
    };
    if (entryIds) await this.pick(deadLetterStream, stream, group, entryIds, visit);
    else await this.scan(deadLetterStream, stream, group, limit, visit);
    await flush();
    return moved;
  }

  /**
   * Walks `deadLetterStream` oldest first, in pages, calling `visit` for each letter of `stream`
   * (and `group`) until it returns `false` or the stream ends.
   */
  private async scan(
    deadLetterStream: string,
    stream: string,
    group: string | undefined,
    limit: number,
    visit: (entryId: string, letter: ParsedLetter) => boolean | Promise<boolean>,
    after?: string,
  ): Promise<void> {
    if (limit <= 0) return;
    const client = this.connections.client;
    let start = after === undefined ? '-' : `(${after}`;
    for (;;) {
      const page: RawEntry[] = await client.range(deadLetterStream, start, '+', PAGE_SIZE);
      for (const entry of page) {
        if (entry.fields === null) continue;
        const letter = parseLetter(entry.fields);
        const source = letter.meta.get('dlq_stream');
        if (source !== undefined && source !== stream) continue;
        if (group !== undefined && letter.meta.get('dlq_group') !== group) continue;
        if (!(await visit(entry.entryId, letter))) return;
      }
      if (page.length < PAGE_SIZE) return;
      // NOTE: exclusive range start '(' needs Redis >= 6.2 (the package's minimum).
      start = `(${page[page.length - 1].entryId}`;
    }
  }

  /** As `scan`, over the given ids only (one XRANGE each; ids not in the stream are skipped). */
  private async pick(
    deadLetterStream: string,
    stream: string,
    group: string | undefined,
    entryIds: readonly string[],
    visit: (entryId: string, letter: ParsedLetter) => boolean | Promise<boolean>,
  ): Promise<void> {
    const client = this.connections.client;
    for (const id of entryIds) {
      const [entry] = await client.range(deadLetterStream, id, id, 1);
      if (!entry?.fields) continue;
      const letter = parseLetter(entry.fields);
      const source = letter.meta.get('dlq_stream');
      if (source !== undefined && source !== stream) continue;
      if (group !== undefined && letter.meta.get('dlq_group') !== group) continue;
      if (!(await visit(entry.entryId, letter))) return;
    }
  }
}
