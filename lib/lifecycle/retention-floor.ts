import { compareEntryIds, nextEntryId } from '../codec/entry-id';
import type { GroupFloorInfo } from '../redis/operator';

/** The lowest entry id some group still needs, and which group that is. */
export interface RetentionFloor {
  /**
   * Every entry below this id has been acknowledged by every counted group (an `XTRIM MINID`
   * bound); `null` when no counted group exists (nothing holds the stream back).
   */
  minId: string | null;
  /** The group that sets `minId` (the first one, on a tie); `null` with `minId`. */
  group: string | null;
}

/**
 * The floor of a stream: for each group not in `ignoreGroups`, the oldest entry it has not
 * acknowledged is either its oldest pending entry or the first entry after its last-delivered-id
 * (not delivered yet), whichever is older; the floor is the oldest of those over every group.
 */
export function retentionFloor(
  groups: readonly GroupFloorInfo[],
  ignoreGroups: ReadonlySet<string>,
): RetentionFloor {
  let floor: RetentionFloor = { minId: null, group: null };
  for (const group of groups) {
    if (ignoreGroups.has(group.name)) continue;
    let needed = nextEntryId(group.lastDeliveredId);
    if (group.oldestPendingId !== null && compareEntryIds(group.oldestPendingId, needed) < 0) {
      needed = group.oldestPendingId;
    }
    if (floor.minId === null || compareEntryIds(needed, floor.minId) < 0) {
      floor = { minId: needed, group: group.name };
    }
  }
  return floor;
}
