import { keySlot, type CommandLink } from '../connection';
import type { PendingProbeRow, PendingProbes } from '../partitions';
import { PENDING_PROBE_SCRIPT, PENDING_PROBE_SHA } from './pel-scripts';

/**
 * {@link PendingProbes} on one link: one script call per hash slot (on one node, one call), the
 * calls of several slots in parallel.
 */
export class RedisPendingProbes implements PendingProbes {
  /**
   * @param link where the scripts go.
   * @param cluster true on a Cluster: a script may only name keys of one slot.
   */
  constructor(
    private readonly link: CommandLink,
    private readonly cluster = false,
  ) {}

  async probe(
    group: string,
    streams: readonly string[],
    minIdleMs: number,
  ): Promise<PendingProbeRow[]> {
    const bySlot = new Map<number, number[]>();
    streams.forEach((stream, i) => {
      const slot = this.cluster ? keySlot(stream) : 0;
      bySlot.set(slot, [...(bySlot.get(slot) ?? []), i]);
    });
    const rows = new Array<PendingProbeRow>(streams.length);
    await Promise.all(
      [...bySlot.values()].map(async (indexes) => {
        const keys = indexes.map((i) => streams[i]);
        const flat = await this.run(keys, [group, Math.max(0, Math.floor(minIdleMs))]);
        indexes.forEach((index, j) => {
          const pending = Number(flat[2 * j]);
          rows[index] = {
            pending: pending < 0 || !Number.isFinite(pending) ? null : pending,
            idle: Number(flat[2 * j + 1]) === 1,
          };
        });
      }),
    );
    return rows;
  }

  private async run(keys: readonly string[], args: ReadonlyArray<string | number>) {
    const tail = [keys.length, ...keys, ...args];
    return (await this.link.sendScript(PENDING_PROBE_SCRIPT, PENDING_PROBE_SHA, tail)) as unknown[];
  }
}
