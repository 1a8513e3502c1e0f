import { partitionStreamOf } from '../codec/partition-key';
import type { CommandContext } from './command-context';
import { duration, safeText, table } from './format';

/**
 * `inspect <stream>` of a partitioned stream (docs/partitions.md "Visible"): no Redis stream of
 * that name, a stored partition count. Per group, one row per partition: its owner (lease),
 * generation, lease left, length, pending and lag, and the group's pause (the flag of the
 * partitioned stream's name, which every partition loop reads). Returns false when `stream` is
 * not partitioned.
 */
export async function inspectPartitioned(ctx: CommandContext, stream: string): Promise<boolean> {
  const leases = ctx.client.partitions;
  const count = leases ? await leases.storedCount(stream) : null;
  if (!leases || count === null) return false;
  const partitions = Array.from({ length: count }, (_, i) => partitionStreamOf(stream, i));
  const [lengths, groupsOf] = await Promise.all([
    Promise.all(partitions.map((p) => ctx.client.length(p))),
    Promise.all(partitions.map((p) => ctx.client.groups(p))),
  ]);
  const groupNames = [...new Set(groupsOf.flatMap((gs) => gs.map((g) => g.name)))].sort();
  const groups = await Promise.all(
    groupNames.map(async (group) => {
      const [rows, pausedSince] = await Promise.all([
        leases.table(stream, group, count),
        ctx.admin.pausedSince(stream, group),
      ]);
      return {
        group,
        paused: pausedSince !== null,
        pausedSince: pausedSince?.toISOString() ?? null,
        partitions: rows.map((row) => {
          const info = groupsOf[row.partition].find((g) => g.name === group);
          return {
            ...row,
            stream: partitions[row.partition],
            length: lengths[row.partition],
            pending: info?.pending ?? 0,
            lag: info?.lag ?? null,
          };
        }),
      };
    }),
  );
  const length = lengths.reduce((sum, n) => sum + n, 0);
  if (ctx.json) {
    ctx.out(JSON.stringify({ stream, partitioned: true, partitions: count, length, groups }));
    return true;
  }
  ctx.out(
    `stream ${safeText(stream)}: partitioned, ${count} partition(s), ${length} entries, ` +
      `${groups.length} group(s)`,
  );
  for (const g of groups) {
    const owners = new Set(g.partitions.map((p) => p.owner).filter((o) => o !== null));
    ctx.out('');
    const paused = g.pausedSince === null ? '' : `, paused since ${g.pausedSince}`;
    ctx.out(`group ${safeText(g.group)}: ${owners.size} owner(s)${paused}`);
    ctx.out(
      table(
        ['PARTITION', 'OWNER', 'GENERATION', 'LEASE LEFT', 'LENGTH', 'PENDING', 'LAG'],
        g.partitions.map((p) => [
          p.partition,
          p.owner === null ? '-' : safeText(p.owner),
          p.generation,
          p.owner === null ? '-' : duration(p.leftMs),
          p.length,
          p.pending,
          p.lag ?? '-',
        ]),
        ['PARTITION', 'GENERATION', 'LEASE LEFT', 'LENGTH', 'PENDING', 'LAG'],
      ),
    );
  }
  return true;
}
