/**
 * Which partitions `member` is assigned among the live `members` (docs/partitions.md "Leases"):
 * contiguous ranges in the order of the sorted member list, partition `i` to member
 * `floor(i * N / P)`, so each of N members gets floor(P/N) or ceil(P/N) of the P partitions.
 * Pure: every process that sees the same member list computes the same assignment, so two
 * processes that start together converge without taking partitions back and forth. A member not
 * in the list is assigned nothing.
 */
export function assignedPartitions(
  members: readonly string[],
  member: string,
  count: number,
): number[] {
  const sorted = [...members].sort();
  const index = sorted.indexOf(member);
  if (index < 0) return [];
  const n = sorted.length;
  const mine: number[] = [];
  for (let i = 0; i < count; i++) if (Math.floor((i * n) / count) === index) mine.push(i);
  return mine;
}
