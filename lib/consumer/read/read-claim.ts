import type { RawEntry } from '../../redis/stream-roles';
import type { LoopContext } from '../context';

/**
 * How long a group's pending entry must be idle before the loop's read of new entries claims it
 * along (XREADGROUP ... CLAIM, Redis >= 8.4; docs/compatibility.md "Server features"): the loop's
 * `minIdleMs`, the rule of the sweep's XAUTOCLAIM, so a dead peer's entries arrive with the next
 * read instead of the next sweep. The sweep stays for what the read cannot do (entries deleted
 * while pending). `undefined` for a partition's loop: a partition's entries of a dead owner come
 * back through the sweep its handler's pending probe asks for, the path that keeps a key's order
 * (docs/partitions.md "Order").
 */
export function readClaimIdleMs(
  context: Pick<LoopContext, 'options' | 'partition'>,
): number | undefined {
  return context.partition === undefined ? context.options.minIdleMs : undefined;
}

/**
 * The delivery counts a read gave itself (an XREADGROUP ... CLAIM: `RawEntry.deliveries`), as the
 * counts of a drain or a reclaim; `null` when it gave none (a fresh read: every entry's is 1).
 */
export function readCounts(entries: readonly RawEntry[]): Map<string, number> | null {
  let counts: Map<string, number> | null = null;
  for (const { entryId, deliveries } of entries) {
    if (deliveries === undefined) continue;
    counts ??= new Map();
    counts.set(entryId, deliveries);
  }
  return counts;
}

/**
 * The CLAIM of a shared read's round: the loops' `claimIdleMs` when they all ask the same one,
 * else none (a partition's loop in the round, or handlers with different `minIdleMs`: the sweep
 * claims theirs). One XREADGROUP has one CLAIM.
 */
export function commonClaim(
  members: ReadonlyArray<{ readonly claimIdleMs: number | undefined }>,
): number | undefined {
  const first = members[0]?.claimIdleMs;
  return members.every((waiter) => waiter.claimIdleMs === first) ? first : undefined;
}
