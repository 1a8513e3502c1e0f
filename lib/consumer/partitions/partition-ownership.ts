import { errorText } from '../../codec/codecs';
import type { PartitionLeases } from '../../redis/stream-roles';
import type { ConsumerLogger } from '../context';
import { assignedPartitions } from './partition-assignment';

/** A loop over one partition, as the ownership starts and stops it. */
export interface PartitionLoop {
  /** Stops it: entries in hand finish (up to `timeoutMs`), then it is down. */
  stop(timeoutMs: number): Promise<void>;
}

/** What one partition owned here looks like. */
export interface OwnedPartition {
  readonly partition: number;
  readonly generation: number;
}

/** Everything the ownership of one handler's partitions needs. */
export interface PartitionOwnershipConfig {
  readonly stream: string;
  readonly group: string;
  /** This process's member id in the group (its consumer name). */
  readonly member: string;
  /** `'Class.method on stream/group'`, for logs. */
  readonly where: string;
  readonly count: number;
  readonly leaseMs: number;
  /** How long a loop that gives up its partition may take to finish its entries in hand. */
  readonly stopTimeoutMs: number;
  readonly leases: PartitionLeases;
  readonly logger: ConsumerLogger;
  /** Starts the loop of a partition just taken (it claims the previous owner's pending entries). */
  open(partition: number, generation: number): Promise<PartitionLoop>;
  /** Clock, for tests. @default Date.now */
  readonly now?: () => number;
}

interface Held extends OwnedPartition {
  loop: PartitionLoop | null;
}

/**
 * Leased ownership of a partitioned stream's partitions for one handler (docs/partitions.md
 * "Leases"). Each tick (every `leaseMs / 4`, at most 250 ms): a heartbeat renews this member and
 * its leases and answers the live members and owners; the sorted member list assigns each member
 * a contiguous range; a partition assigned here and free (or expired) is taken (its generation
 * grows) and its loop started; one assigned elsewhere is handed over: its loop finishes the
 * entries in hand, then the lease is freed. A lease seen taken by another member, or not renewed
 * within `leaseMs` (Redis unreachable), stops its loop at once. One log line per change of the
 * owned set.
 */
export class PartitionOwnership {
  private readonly held = new Map<number, Held>();
  private readonly handingOver = new Map<number, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | null = null;
  private stopped = false;
  private lastRenewedAt: number;
  private reported = '';
  private members = 0;
  private readonly now: () => number;
  readonly tickMs: number;

  constructor(private readonly config: PartitionOwnershipConfig) {
    this.now = config.now ?? Date.now;
    this.lastRenewedAt = this.now();
    this.tickMs = Math.max(20, Math.min(250, Math.floor(config.leaseMs / 4)));
  }

  /** The partitions owned here now, by index. */
  owned(): OwnedPartition[] {
    return [...this.held.values()]
      .map(({ partition, generation }) => ({ partition, generation }))
      .sort((a, b) => a.partition - b.partition);
  }

  /** Starts ticking (the first tick at once). */
  start(): void {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => void this.tick(), this.tickMs);
    void this.tick();
  }

  /** One tick, unless one is running. Never rejects. */
  tick(): Promise<void> {
    this.ticking ??= this.runTick().finally(() => (this.ticking = null));
    return this.ticking;
  }

  /**
   * Stops ticking, stops every loop (entries in hand finish, up to `timeoutMs`, by default
   * `stopTimeoutMs`), frees every lease and leaves the group's members, so the others take the
   * partitions on their next tick.
   */
  async stop(timeoutMs = this.config.stopTimeoutMs): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.ticking;
    const held = [...this.held.values()];
    await Promise.all([...held.map((h) => h.loop?.stop(timeoutMs)), ...this.handingOver.values()]);
    this.held.clear();
    const { stream, group, member, leases } = this.config;
    try {
      await leases.release(
        stream,
        group,
        member,
        held.map((h) => h.partition),
        true,
      );
    } catch (err) {
      this.config.logger.warn(
        `${this.config.where}: leases not freed at stop (${errorText(err)}); they expire after ${this.config.leaseMs} ms`,
      );
    }
    this.report();
  }

  private async runTick(): Promise<void> {
    if (this.stopped) return;
    const { stream, group, member, count, leaseMs, leases } = this.config;
    try {
      const renew = [...this.held.keys(), ...this.handingOver.keys()];
      const view = await leases.heartbeat(stream, group, member, count, leaseMs, renew);
      this.lastRenewedAt = this.now();
      this.members = view.members.length;
      for (const [partition, held] of this.held) {
        const seen = view.owners[partition];
        if (seen?.owner !== member || seen.generation !== held.generation)
          this.lose(partition, `taken over by ${seen?.owner ?? 'nobody'}`);
      }
      const assigned = new Set(assignedPartitions(view.members, member, count));
      for (const partition of this.held.keys())
        if (!assigned.has(partition)) this.handOver(partition);
      // free, or left recorded for this member by an earlier run of it (a restart)
      const takeable = (p: number): boolean =>
        !this.held.has(p) &&
        !this.handingOver.has(p) &&
        (view.owners[p]?.owner === null || view.owners[p]?.owner === member);
      const free = [...assigned].filter(takeable);
      const stale = view.owners
        .map((_, p) => p)
        .filter((p) => takeable(p) && !assigned.has(p) && view.owners[p].owner === member);
      if (stale.length > 0) await leases.release(stream, group, member, stale, false);
      if (free.length > 0 && !this.stopped) await this.take(free);
    } catch (err) {
      this.failedTick(err);
    }
    this.report();
  }

  /** Takes the leases of `partitions` that are still free and starts their loops. */
  private async take(partitions: number[]): Promise<void> {
    const { stream, group, member, leaseMs, leases } = this.config;
    const generations = await leases.acquire(stream, group, member, leaseMs, partitions);
    await Promise.all(
      partitions.map(async (partition, i) => {
        const generation = generations[i];
        if (!generation) return;
        const held: Held = { partition, generation, loop: null };
        this.held.set(partition, held);
        try {
          held.loop = await this.config.open(partition, generation);
        } catch (err) {
          // not started: free it, a later tick tries again
          this.held.delete(partition);
          this.config.logger.warn(
            `${this.config.where}: partition ${partition} not started (${errorText(err)}); freed`,
          );
          await leases.release(stream, group, member, [partition], false).catch(() => undefined);
        }
        if (this.stopped && held.loop) void held.loop.stop(this.config.stopTimeoutMs);
      }),
    );
  }

  /** Assigned elsewhere now: the loop finishes its entries in hand, then the lease is freed. */
  private handOver(partition: number): void {
    const held = this.held.get(partition);
    if (!held) return;
    this.held.delete(partition);
    const { stream, group, member, leases, stopTimeoutMs } = this.config;
    const done = (async () => {
      await held.loop?.stop(stopTimeoutMs);
      await leases.release(stream, group, member, [partition], false);
    })()
      .catch((err: unknown) =>
        this.config.logger.warn(
          `${this.config.where}: partition ${partition} not freed (${errorText(err)}); it expires after ${this.config.leaseMs} ms`,
        ),
      )
      .finally(() => this.handingOver.delete(partition));
    this.handingOver.set(partition, done);
  }

  /** The lease is no longer ours: the loop stops at once, nothing is freed. */
  private lose(partition: number, why: string): void {
    const held = this.held.get(partition);
    if (!held) return;
    this.held.delete(partition);
    this.config.logger.warn(
      `${this.config.where}: lost partition ${partition} (generation ${held.generation}, ${why}); its loop stops`,
    );
    void held.loop?.stop(0);
  }

  /** A failed heartbeat: past `leaseMs` without renewal, every partition is given up. */
  private failedTick(err: unknown): void {
    const { where, logger, leaseMs } = this.config;
    logger.warn(`${where}: partition lease heartbeat failed: ${errorText(err)}`);
    if (this.now() - this.lastRenewedAt >= leaseMs - this.tickMs)
      for (const partition of [...this.held.keys()])
        this.lose(partition, `lease not renewed for ${this.now() - this.lastRenewedAt} ms`);
  }

  /** One log line when the owned set changed since the last one. */
  private report(): void {
    const now = this.owned()
      .map((o) => o.partition)
      .join(',');
    if (now === this.reported) return;
    this.config.logger.log(
      `${this.config.where}: partitions owned [${this.reported}] -> [${now}] (${this.members} member(s))`,
    );
    this.reported = now;
  }
}
