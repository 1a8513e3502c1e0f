import type { StreamQueries } from '../../redis/stream-roles';

/** How often the lag of the owned partitions is read. */
export const PARTITION_LAG_EVERY_MS = 2000;

/**
 * The lag of the partitions a process owns (docs/partitions.md "Visible"): XINFO GROUPS of each
 * owned partition stream, at most every {@link PARTITION_LAG_EVERY_MS}, read on demand by the
 * snapshot (which never waits for it: it shows the last figures).
 */
export class PartitionLag {
  private readonly lags = new Map<number, number | null>();
  private readAt = 0;
  private reading: Promise<void> | null = null;

  constructor(
    private readonly queries: Pick<StreamQueries, 'groups'>,
    private readonly group: string,
    private readonly streamOf: (partition: number) => string,
    private readonly now: () => number = Date.now,
  ) {}

  /** The last lag read for `partition` (`null`: not read yet, or unknown). */
  of(partition: number): number | null {
    return this.lags.get(partition) ?? null;
  }

  /** Reads the lag of `partitions` again when the last read is old enough; never rejects. */
  refresh(partitions: readonly number[]): void {
    if (this.reading || this.now() - this.readAt < PARTITION_LAG_EVERY_MS) return;
    this.readAt = this.now();
    this.reading = Promise.all(
      partitions.map(async (partition) => {
        const groups = await this.queries.groups(this.streamOf(partition));
        this.lags.set(partition, groups.find((g) => g.name === this.group)?.lag ?? null);
      }),
    )
      .then(() => undefined)
      .catch(() => undefined)
      .finally(() => (this.reading = null));
  }
}
