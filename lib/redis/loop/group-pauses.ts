import { keySlot, type CommandLink } from '../connection';
import { pauseKeyOf } from '../package-keys';
import type { GroupPauses, PauseTarget } from '../stream-roles';

/**
 * The pause switch of a group on a stream (docs/operations.md "Pausing a group"): one string key
 * per stream and group, in the stream's hash slot, holding the time it was paused (ms since the
 * epoch). It stays until resumed, whatever restarts in between.
 */
export class RedisGroupPauses implements GroupPauses {
  /**
   * @param link where the commands go.
   * @param cluster true on a Cluster: one MGET per hash slot.
   */
  constructor(
    private readonly link: CommandLink,
    private readonly cluster = false,
  ) {}

  async pause(stream: string, group: string, at: number): Promise<void> {
    await this.link.send(['SET', pauseKeyOf(stream, group), String(at)]);
  }

  async resume(stream: string, group: string): Promise<boolean> {
    return Number(await this.link.send(['DEL', pauseKeyOf(stream, group)])) > 0;
  }

  async pausedSince(targets: readonly PauseTarget[]): Promise<(number | null)[]> {
    if (targets.length === 0) return [];
    const keys = targets.map(({ stream, group }) => pauseKeyOf(stream, group));
    // one MGET may only name keys of one slot (the streams of a shared read share one, the groups
    // of one stream too, unless a name has a stray '}'): one MGET per slot, in parallel
    const bySlot = new Map<number, number[]>();
    keys.forEach((key, i) => {
      const slot = this.cluster ? keySlot(key) : 0;
      bySlot.set(slot, [...(bySlot.get(slot) ?? []), i]);
    });
    const since: (number | null)[] = new Array<number | null>(keys.length).fill(null);
    await Promise.all(
      [...bySlot.values()].map(async (indexes) => {
        const reply = (await this.link.send(['MGET', ...indexes.map((i) => keys[i])])) as (
          string | null
        )[];
        indexes.forEach((index, j) => {
          const value = reply[j];
          since[index] = value === null || value === undefined ? null : Number(value) || 0;
        });
      }),
    );
    return since;
  }
}
