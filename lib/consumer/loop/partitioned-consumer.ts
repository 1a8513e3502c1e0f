import { partitionStreamOf } from '../../codec/partition-key';
import type {
  ConsumerSnapshot,
  ConsumerState,
  OwnedPartitionInfo,
} from '../../interfaces/consumer-snapshot.interface';
import type { PartitionLeases, StreamQueries } from '../../redis/stream-roles';
import { AckTurn } from '../order';
import type { StreamConsumerConfig } from './loop-config';
import { handlerLimits, type HandlerLimits } from '../limits';
import {
  PartitionLag,
  type PartitionLinks,
  PartitionOwnership,
  type PartitionLoop,
  PartitionSweeps,
} from '../partitions';
import { StreamConsumer } from './stream-consumer';

/** What a partitioned handler needs beside a plain loop's config. */
export interface PartitionedConsumerConfig extends Omit<
  StreamConsumerConfig,
  'client' | 'reader' | 'pauses' | 'ownsClient' | 'partition' | 'sweeps' | 'limits' | 'ackTurn'
> {
  /** The partition count (`partitions`). */
  readonly count: number;
  /** `partitionLeaseMs`. */
  readonly leaseMs: number;
  /** How long a loop giving up its partition may take to finish its entries in hand. */
  readonly stopTimeoutMs: number;
  /** Where the leases are kept (the app's shared connection). */
  readonly leases: PartitionLeases;
  /** Where the lag of the owned partitions is read (the app's shared connection). */
  readonly queries: Pick<StreamQueries, 'groups'>;
  /**
   * The connections of every partition loop: their commands, the read naming their partitions,
   * the pause flag of the group on `stream` (docs/partitions.md "Connections").
   */
  readonly links: PartitionLinks;
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
  'totalFenced',
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
 * (its own PEL drain) handles in stream order before it reads new entries. The loops hold no
 * connection of their own ({@link PartitionLinks}: one read names their partitions) and sweep
 * when the handler's one pending probe finds work ({@link PartitionSweeps}). Seen from the app as
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
  /** One pending probe for every loop; absent (a client without scripts): each sweeps alone. */
  private readonly sweeps: PartitionSweeps | undefined;
  /** Loops of partitions that stop, by partition: a loop of the same partition waits for it. */
  private readonly closing = new Map<number, Promise<void>>();
  /** `concurrency` and `rateLimit` for the handler, shared by every partition loop. */
  private readonly limits: HandlerLimits;
  /** The turn of the partition loops' XACKs: all of a turn in one write on their connection. */
  private readonly ackTurn: AckTurn;

  constructor(private readonly config: PartitionedConsumerConfig) {
    this.stream = config.stream;
    this.group = config.group;
    this.lag = new PartitionLag(
      config.queries,
      config.group,
      (partition) => partitionStreamOf(config.stream, partition),
      config.now,
    );
    this.limits = handlerLimits(
      config.options,
      config.links.commands,
      config.stream,
      config.group,
      {
        signal: this.stopSwitch.signal,
        now: config.now ?? Date.now,
      },
    );
    this.ackTurn = new AckTurn(config.links.commands);
    const probes = config.links.commands.pendingProbes;
    this.sweeps = probes
      ? new PartitionSweeps({
          group: config.group,
          where: `${config.handlerName} on ${config.stream}/${config.group}`,
          logger: config.logger,
          claimIntervalMs: config.options.claimIntervalMs,
          minIdleMs: config.options.minIdleMs,
          probes,
          now: config.now,
          phase: config.sweepPhase,
        })
      : undefined;
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

  /**
   * The partitions owned here now, with their lease generation, last known lag and the figures
   * of their loop (a partition whose loop is not up yet: `starting`, zeros).
   */
  owned(): OwnedPartitionInfo[] {
    const owned = this.ownership.owned();
    this.lag.refresh(owned.map((o) => o.partition));
    return owned.map((o) => {
      const loop = this.loops.get(o.partition)?.snapshot();
      return {
        ...o,
        lag: this.lag.of(o.partition),
        state: loop?.state ?? 'starting',
        tpsIn: loop?.tpsIn ?? 0,
        tpsOut: loop?.tpsOut ?? 0,
        totalAcked: loop?.totalAcked ?? 0,
        totalErrors: loop?.totalErrors ?? 0,
      };
    });
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
      // lost partitions stop on their own (stop(0)); the handler's links close after them
      await Promise.all(this.closing.values());
      this.sweeps?.stop();
      await this.config.links.close();
      this.state = 'stopped';
    })();
    return this.stopped;
  }

  /** Starts the loop of a partition just taken, after claiming what its last owner left pending. */
  private async open(partition: number, generation: number): Promise<PartitionLoop> {
    const { config } = this;
    const stream = partitionStreamOf(config.stream, partition);
    // a loop of this partition still stopping here (lost, then taken back) leaves the read first
    await this.closing.get(partition);
    const client = config.links.commands;
    await client.createGroup(stream, config.group, config.options.startId);
    // the previous owner's pending entries become ours, without a delivery (JUSTID): the loop's
    // own PEL drain runs them first and counts the one delivery they get here
    for (let cursor = '0-0'; ;) {
      ({ cursor } = await client.takeOver(stream, config.group, config.consumer, cursor, 500));
      if (cursor === '0-0') break;
    }
    const reader = config.links.reader(stream);
    // its parked read ends when the probe finds work for its sweep
    const sweeps = this.sweeps?.join(stream, () => void reader.interrupt(false).catch(() => {}));
    const loop = new StreamConsumer({
      ...config,
      stream,
      client,
      ownsClient: false,
      reader,
      pauses: config.links.pauses,
      sweeps,
      partition: { index: partition, generation },
      limits: this.limits,
      ackTurn: this.ackTurn,
    });
    this.loops.set(partition, loop);
    loop.start();
    return {
      stop: async (timeoutMs) => {
        // a lost lease stops at once (timeout 0): entries a round of the shared read got for it
        // reach it still, and are released unstarted (never left pending here unseen)
        const stopped = (async () => {
          await loop.stop(timeoutMs);
          sweeps?.leave();
          await reader.leave();
        })();
        this.closing.set(partition, stopped);
        try {
          await stopped;
        } finally {
          if (this.closing.get(partition) === stopped) this.closing.delete(partition);
          if (this.loops.get(partition) === loop) this.loops.delete(partition);
          this.ended.push(loop.snapshot());
        }
      },
    };
  }
}
