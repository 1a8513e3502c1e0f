import { partitionGroups, readPartitions } from '../stats/partitioned-inspection';
import type { CommandContext } from './command-context';
import { duration, safeText, table } from './format';

/**
 * `inspect <stream>` of a partitioned stream (docs/partitions.md "Visible"): no Redis stream of
 * that name, a stored partition count. One stream to its users: its length and dead letters are
 * its partitions' summed, and per group `ConsumerStats.inspect` (pending, lag, oldest pending,
 * dead letters summed, the consumers) with one row per partition: its owner (lease), generation,
 * lease left, length, pending, lag and dead letters; and the group's pause (the flag of the
 * partitioned stream's name, which every partition loop reads). Returns false when `stream` is
 * not partitioned.
 */
export async function inspectPartitioned(ctx: CommandContext, stream: string): Promise<boolean> {
  const leases = ctx.client.partitions;
  const count = leases ? await leases.storedCount(stream) : null;
  if (!leases || count === null) return false;
  const read = await readPartitions(ctx.client, stream, count);
  const groups = await Promise.all(
    partitionGroups(read).map(async (group) => {
      const [inspection, pausedSince] = await Promise.all([
        ctx.stats.inspect(stream, group),
        ctx.admin.pausedSince(stream, group),
      ]);
      return {
        group,
        ...inspection,
        partitions: inspection.partitions ?? [],
        paused: pausedSince !== null,
        pausedSince: pausedSince?.toISOString() ?? null,
      };
    }),
  );
  const length = read.lengths.reduce((sum, n) => sum + n, 0);
  // the stream's letters of every partition and group (each group's inspection splits them)
  const letters = await ctx.stats.deadLetterCounts({ asked: stream, stream, partitions: count });
  const deadLetters = letters.total;
  if (ctx.json) {
    const view = { stream, partitioned: true, partitions: count, length, deadLetters, groups };
    ctx.out(JSON.stringify(view));
    return true;
  }
  ctx.out(
    `stream ${safeText(stream)}: partitioned, ${count} partition(s), ${length} entries, ` +
      `${groups.length} group(s), ${deadLetters} dead letter(s)`,
  );
  for (const g of groups) {
    const owners = new Set(g.partitions.map((p) => p.owner).filter((o) => o !== null));
    ctx.out('');
    const paused = g.pausedSince === null ? '' : `, paused since ${g.pausedSince}`;
    ctx.out(
      `group ${safeText(g.group)}: ${owners.size} owner(s)${paused}, pending ${g.pending}, ` +
        `lag ${g.lag ?? '-'}, oldest pending ${duration(g.oldestPendingMs)}`,
    );
    ctx.out(
      table(
        [
          'PARTITION',
          'OWNER',
          'GENERATION',
          'LEASE LEFT',
          'LENGTH',
          'PENDING',
          'LAG',
          'DEAD LETTERS',
        ],
        g.partitions.map((p) => [
          p.partition,
          p.owner === null ? '-' : safeText(p.owner),
          p.generation,
          p.owner === null ? '-' : duration(p.leaseLeftMs),
          p.length,
          p.pending,
          p.lag ?? '-',
          p.deadLetters,
        ]),
        ['PARTITION', 'GENERATION', 'LEASE LEFT', 'LENGTH', 'PENDING', 'LAG', 'DEAD LETTERS'],
      ),
    );
    if (g.consumers.length > 0) {
      ctx.out(
        table(
          ['CONSUMER', 'PENDING', 'IDLE'],
          g.consumers.map((c) => [c.name, c.pending, duration(c.idleMs)]),
          ['PENDING', 'IDLE'],
        ),
      );
    }
  }
  return true;
}
