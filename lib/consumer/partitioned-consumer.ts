import { partitionStreamOf } from '../codec/partition-key';
import type {
  ConsumerSnapshot,
  ConsumerState,
  OwnedPartitionInfo,
} from '../interfaces/consumer-snapshot.interface';
import type { GroupPauses, PartitionLeases } from '../redis/stream-roles';
import type { StreamQueries, StreamsClient } from '../redis/stream-roles';
import type { StreamConsumerConfig } from './consumer.types';
import { PartitionLag } from './partition-lag';
import { PartitionOwnership, type PartitionLoop } from './partition-ownership';
import { NEVER_PAUSED, PauseWatch, type PauseProbe } from './pause-watch';
import { StreamConsumer } from './stream-consumer';

/** What a partitioned handler needs beside a plain loop's config. */
export interface PartitionedConsumerConfig extends Omit<
  StreamConsumerConfig,
  'client' | 'reader' | 'pauses' | 'ownsClient' | 'partition'
> {
  /** The partition count (`partitions`). */
  readonly count: number;
  /** `partitionLeaseMs`. */
  readonly leaseMs: number;
  /** How long a loop giving up its partition may take to finish its entries in hand. */
  readonly stopTimeoutMs: number;
  /** Where the leases are kept (the app's shared connection). */
  readonly leases: PartitionLeases;
  /**
   * The pause switch of the group on `stream` itself (the app's shared connection): every
   * partition loop holds while it is set (docs/partitions.md "Pause"). None (a test fake): never
   * paused.
   */
  readonly pauses?: Pick<GroupPauses, 'pausedSince'>;
  /** Where the lag of the owned partitions is read (the app's shared connection). */
  readonly queries: Pick<StreamQueries, 'groups'>;
  /** A connection of its own for the loop of one partition (closed with the loop). */
  openClient(): StreamsClient;
}

/** Sums of the counters of every partition loop that ran here. */
const SUMMED = [
  'totalRead',
  'totalAcked',
  'totalDlq',
  'totalErrors',
  'totalDeleted',
  'totalDuplicates',
  'totalStale',
  'retrying',
  'totalRetries',
  'tpsIn',
  'tpsOut',
] as const;

/**
 * A handler on a partitioned stream (docs/partitions.md): the partitions this process owns
 * ({@link PartitionOwnership}), each read by a {@link StreamConsumer} of its own over the
 * partition's stream (`<stream>:p:<i>`) with per-key lanes. A partition just taken first gets
 * the previous owner's pending entries claimed to this consumer, which the loop's first beat
 * (its own PEL drain) handles in stream order before it reads new entries. Seen from the app as
 * one loop on `stream` (stats, health, the dashboard).
 */
export class PartitionedConsumer {
  readonly stream: string;
  readonly group: string;
  private readonly ownership: PartitionOwnership;
  private readonly loops = new Map<number, StreamConsumer>();
  /** Figures of the loops that ended here (a hand-over), kept in the sums. */
  private readonly ended: ConsumerSnapshot[] = [];
  private readonly stopSwitch = new AbortController();
  private state: ConsumerState = 'starting';
  private stopped: Promise<void> | null = null;
  private readonly lag: PartitionLag;
  /** The pause flag of the group on the partitioned stream's name, shared by every loop. */
  private readonly pauseProbe: PauseProbe;

  constructor(private readonly config: PartitionedConsumerConfig) {
    this.stream = config.stream;
    this.group = config.group;
    this.lag = new PartitionLag(
      config.queries,
      config.group,
      (partition) => partitionStreamOf(config.stream, partition),
      config.now,
    );
    // one flag for the whole group (the base stream's), one MGET per interval for every loop
    this.pauseProbe = config.pauses
      ? new PauseWatch(config.pauses, config.group, config.now, (text) =>
          config.logger.warn(text),
        ).member(config.stream)
      : NEVER_PAUSED;
    this.ownership = new PartitionOwnership({
      stream: config.stream,
      group: config.group,
      member: config.consumer,
      where: `${config.handlerName} on ${config.stream}/${config.group}`,
      count: config.count,
      leaseMs: config.leaseMs,
      stopTimeoutMs: config.stopTimeoutMs,
      leases: config.leases,
      logger: config.logger,
      open: (partition, generation) => this.open(partition, generation),
      now: config.now,
    });
  }

  /** Aborted when the handler is asked to stop. */
  get signal(): AbortSignal {
    return this.stopSwitch.signal;
  }

  /** Where the loops copy their dead letters; `false` for none. */
  get deadLetterStream(): string | false {
    return this.config.options.deadLetterStream;
  }

  /** Starts taking partitions (idempotent). */
  start(): void {
    if (this.stopped) return;
    this.state = 'running';
    this.ownership.start();
  }

  /** The partitions owned here now, with their lease generation and last known lag. */
  owned(): OwnedPartitionInfo[] {
    const owned = this.ownership.owned();
    this.lag.refresh(owned.map((o) => o.partition));
    return owned.map((o) => ({ ...o, lag: this.lag.of(o.partition) }));
  }

  /** The figures of every partition loop that ran here, summed, and the partitions owned now. */
  snapshot(): ConsumerSnapshot {
    const all = [...this.ended, ...[...this.loops.values()].map((l) => l.snapshot())];
    const sums = Object.fromEntries(
      SUMMED.map((name) => [name, all.reduce((sum, s) => sum + s[name], 0)]),
    ) as Record<(typeof SUMMED)[number], number>;
    const live = [...this.loops.values()].map((l) => l.snapshot());
    const degraded = live.some((s) => s.state === 'degraded');
    // paused once every loop it owns has seen the flag (a loop parked in a read sees it next)
    const paused = live.length > 0 && live.every((s) => s.state === 'paused');
    const lastError = all.map((s) => s.lastError).find((e) => e !== null) ?? null;
    return {
      stream: this.stream,
      group: this.group,
      consumer: this.config.consumer,
      handler: this.config.handlerName,
      state:
        this.state !== 'running'
          ? this.state
          : degraded
            ? 'degraded'
            : paused
              ? 'paused'
              : 'running',
      ...sums,
      lastError,
      partitions: this.owned(),
    };
  }

  /**
   * Stops: every loop finishes its entries in hand (up to `timeoutMs`), every lease is freed and
   * this member leaves, so the other processes take the partitions at once.
   */
  stop(timeoutMs: number): Promise<void> {
    this.stopped ??= (async () => {
      this.state = 'stopping';
      this.stopSwitch.abort();
      await this.ownership.stop(timeoutMs);
      this.state = 'stopped';
    })();
    return this.stopped;
  }

  /** Starts the loop of a partition just taken, after claiming what its last owner left pending. */
  private async open(partition: number, generation: number): Promise<PartitionLoop> {
    const { config } = this;
    const stream = partitionStreamOf(config.stream, partition);
    const client = config.openClient();
    try {
      await client.createGroup(stream, config.group, config.options.startId);
      // the previous owner's pending entries become ours: the loop's own PEL drain runs them first
      for (let cursor = '0-0'; ;) {
        const page = await client.autoClaim(stream, config.group, config.consumer, 0, cursor, 500);
        cursor = page.cursor;
        if (cursor === '0-0') break;
      }
    } catch (err) {
      await client.close().catch(() => undefined);
      throw err;
    }
    const loop = new StreamConsumer({
      ...config,
      stream,
      client,
      pauses: this.pauseProbe,
      partition: { index: partition, generation },
    });
    this.loops.set(partition, loop);
    loop.start();
    return {
      stop: async (timeoutMs) => {
        await loop.stop(timeoutMs);
        if (this.loops.get(partition) === loop) this.loops.delete(partition);
        this.ended.push(loop.snapshot());
      },
    };
  }
}
