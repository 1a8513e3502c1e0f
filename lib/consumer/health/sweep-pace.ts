/**
 * When the loop sweeps for dead peers' work (`PelSweep.sweep`): its own pace (`SweepPace`), or,
 * for a partition loop, the flag its handler's pending probe raises (`PartitionSweeps`).
 */
export interface SweepSchedule {
  /** When the next sweep is due (`now()` ms; always finite: a park waits no longer). */
  readonly nextAt: number;
  /** True when a sweep is due now. */
  due(): boolean;
  /** The sweep begun at `startedAt` saw `pending` entries in the group's PEL. */
  swept(pending: number, startedAt: number): void;
  /** The loop read entries (a quiet group is not quiet any more). */
  delivered(): void;
}

/**
 * When a loop sweeps for dead peers' work (docs/delivery.md "The loop", step 4; docs/scale.md
 * "Many handlers" for many idle loops). Every `claimIntervalMs`, except:
 * - a quiet loop (its last sweep found the group's PEL empty and it has read nothing since) waits
 *   `max(claimIntervalMs, minIdleMs / 2)`: nothing can pass `minIdleMs` idle sooner, since a new
 *   delivery shows in the next summary (only entries a stopping peer released wait for it);
 * - the second sweep after start falls at a random point of its interval, so the sweeps of many
 *   loops spread over it instead of firing together.
 */
export class SweepPace implements SweepSchedule {
  /** When the next sweep is due (`now()` ms); the first one at once. */
  private dueAt = 0;
  private sweeps = 0;
  private quiet = false;

  /**
   * @param phase where in its interval the second sweep falls (0..1); absent: at random.
   */
  constructor(
    private readonly claimIntervalMs: number,
    private readonly minIdleMs: number,
    private readonly now: () => number,
    private readonly phase: number = Math.random(),
  ) {}

  /** When the next sweep is due. */
  get nextAt(): number {
    return this.dueAt;
  }

  /** True when a sweep is due now. */
  due(): boolean {
    return this.now() >= this.dueAt;
  }

  /** The sweep begun at `startedAt` saw `pending` entries in the group's PEL: the next is due. */
  swept(pending: number, startedAt: number): void {
    this.sweeps++;
    this.quiet = pending === 0;
    let next = this.quiet
      ? Math.max(this.claimIntervalMs, Math.floor(this.minIdleMs / 2))
      : this.claimIntervalMs;
    if (this.sweeps === 1) next = Math.max(1, Math.floor(next * this.phase));
    this.dueAt = startedAt + next;
  }

  /** The loop read entries: deliveries again, so a quiet loop sweeps at the normal pace. */
  delivered(): void {
    if (!this.quiet) return;
    this.quiet = false;
    this.dueAt = Math.min(this.dueAt, this.now() + this.claimIntervalMs);
  }
}
