import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { resolveCodec } from '../codec/codecs';
import { EchoStreamConnections } from '../runtime/echo-stream.connections';
import { ECHO_STREAM_LIFECYCLE, ECHO_STREAM_LOOP_CONTROL } from '../config/constants';
import type { EchoStreamLifecycle } from '../runtime/echo-stream.lifecycle';
import type { EchoStreamOrchestrator } from '../runtime/echo-stream.orchestrator';
import { ConsumerRegistry } from '../runtime/echo-stream.registry';
import type {
  DeadLetterEntry,
  DeadLetterQueryOptions,
  RedriveOptions,
} from '../interfaces/dead-letter-entry.interface';
import type { HistoryEntry, HistoryOptions } from '../interfaces/lifecycle.interface';
import { historyWindow, readHistory, readMergedHistory } from '../lifecycle/history-reader';
import { partitionStreamOf } from '../codec/partition-key';
import { checkArgs, checkEntryIds, checkGroupArgs } from './admin-args';
import { DeadLetterOperations } from './dead-letter-operations';
/** Default `count` of `deadLetters()`. */
const DEFAULT_LIST_COUNT = 100;

/**
 * Operations on dead letters and on the loops: list and redrive dead letters, and start/stop
 * the loops by hand (with `autoStart: false`).
 *
 * The dead-letter stream(s) of a source stream are the `deadLetterStream` of this app's loops on
 * that stream (and group, when given), else `<stream>:dlq`. A dead-letter stream shared by
 * several source streams is fine: only letters whose `dlq_stream` is the given stream are touched.
 * A partitioned stream is one stream here (docs/partitions.md "Dead letters"): its own name asks
 * for the letters of every partition.
 */
@Injectable()
export class EchoStreamAdmin {
  private readonly logger = new Logger(EchoStreamAdmin.name);
  private readonly letters: DeadLetterOperations;

  constructor(
    private readonly connections: EchoStreamConnections,
    private readonly registry: ConsumerRegistry,
    @Inject(ECHO_STREAM_LOOP_CONTROL)
    private readonly orchestrator: Pick<EchoStreamOrchestrator, 'start' | 'stop'>,
    @Optional()
    @Inject(ECHO_STREAM_LIFECYCLE)
    private readonly lifecycle?: Pick<EchoStreamLifecycle, 'codecFor'>,
  ) {
    this.letters = new DeadLetterOperations({
      client: () => this.connections.client,
      sinksOf: (stream, group) => this.registry.deadLetterStreamsOf(stream, group),
      logger: this.logger,
    });
  }

  /**
   * Reads `stream` as it was: the entries between `from` and `to` (each a `Date` or an entry id,
   * both inclusive), oldest first, at most `count`, one XRANGE page at a time as you iterate
   * (constant memory, whatever the length). Payloads are decoded with `options.codec`, else the
   * codec of this app's handler of the stream, else the module default; an entry the codec cannot
   * decode comes with `payload: undefined` and `decodeError`. Raw `fields` are always there. A
   * partitioned stream's name reads its partitions merged in entry-id order, each entry with its
   * `partition`.
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
    const client = this.connections.client.lifecycle();
    // a partitioned stream: its partitions merged in entry-id order
    const partitions = await client.partitionCount(stream);
    if (partitions === null) yield* readHistory<T>(client, stream, window, codec);
    else {
      const streams = Array.from({ length: partitions }, (_, i) => partitionStreamOf(stream, i));
      yield* readMergedHistory<T>(client, streams, window, codec);
    }
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
   * A partitioned stream (docs/partitions.md "Dead letters") takes its own name (every partition's
   * letters) or a partition's (`orders:p:3`: that partition's); each letter goes to the partition
   * of its key (`crc32(key) mod` the stored count, its `pkey` field kept), where it runs after
   * the key's entries published since.
   * @param options.group only letters whose `dlq_group` is this group.
   * @param options.count at most this many (default: all).
   * @param options.entryIds only these dead letters (their ids in the dead-letter stream).
   * @returns how many dead letters were redriven.
   * @throws TypeError (as a rejection, nothing done) on a bad argument.
   */
  async redrive(stream: string, options: RedriveOptions = {}): Promise<number> {
    const { group, count } = checkArgs('redrive', stream, options, undefined);
    const entryIds = checkEntryIds('redrive', options.entryIds);
    return this.letters.redrive(stream, group, count, entryIds);
  }

  /**
   * Lists dead letters of `stream`, oldest first, without changing anything. A partitioned
   * stream's name lists the letters of every partition, each with its `partition` and `key`.
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
    return this.letters.list(stream, group, count, after?.[0]);
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
    const deleted = await this.letters.remove(stream, ids);
    if (deleted.length > 0) {
      this.logger.log(`Deleted ${deleted.length} dead letter(s) of '${stream}'`);
    }
    return deleted;
  }
}
