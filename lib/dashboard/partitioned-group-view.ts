import { partitionStreamOf } from '../codec/partition-key';
import type { ConsumerSnapshot } from '../interfaces/consumer-snapshot.interface';
import type { StreamsClient } from '../redis/stream-roles';
import type { GroupView, PartitionView } from './dashboard-views';

/**
 * The group rows of a partitioned stream (docs/partitions.md "Visible"), which has no Redis
 * stream of its name: one row per group this app runs a partitioned handler of, its pending and
 * lag summed over the partitions, and per partition its owner, generation, lease left, pending
 * and lag. `null` when `stream` is not partitioned.
 */
export async function partitionedGroupViews(
  client: StreamsClient,
  stream: string,
  loops: readonly ConsumerSnapshot[],
): Promise<{ length: number; groups: GroupView[] } | null> {
  const leases = client.partitions;
  const count = leases ? await leases.storedCount(stream) : null;
  if (!leases || count === null) return null;
  const streams = Array.from({ length: count }, (_, i) => partitionStreamOf(stream, i));
  const [lengths, groupsOf] = await Promise.all([
    Promise.all(streams.map((s) => client.length(s))),
    Promise.all(streams.map((s) => client.groups(s))),
  ]);
  const mine = loops.filter((l) => l.stream === stream && l.partitions !== undefined);
  // the pause flag of each group on the stream's name (docs/partitions.md "Pause"): one MGET
  const pausedSince = client.pauses
    ? await client.pauses.pausedSince(mine.map((loop) => ({ stream, group: loop.group })))
    : mine.map(() => null);
  const groups = await Promise.all(
    mine.map(async (loop, index): Promise<GroupView> => {
      const since = pausedSince[index];
      const rows = await leases.table(stream, loop.group, count);
      const partitions: PartitionView[] = rows.map((row) => {
        const info = groupsOf[row.partition].find((g) => g.name === loop.group);
        return { ...row, pending: info?.pending ?? 0, lag: info?.lag ?? null };
      });
      const owners = [...new Set(partitions.flatMap((p) => (p.owner === null ? [] : [p.owner])))];
      const lags = partitions.map((p) => p.lag);
      return {
        group: loop.group,
        state: loop.state,
        pausedSince: since === null || since === undefined ? null : new Date(since).toISOString(),
        handler: loop.handler,
        consumers: owners.map((name) => ({
          name,
          pending: partitions.filter((p) => p.owner === name).reduce((n, p) => n + p.pending, 0),
          idleMs: 0,
        })),
        lastDeliveredId: '',
        pending: partitions.reduce((n, p) => n + p.pending, 0),
        lag: lags.some((l) => l === null) ? null : lags.reduce((n: number, l) => n + (l ?? 0), 0),
        oldestPendingMs: null,
        deadLetters: 0,
        totalDuplicates: loop.totalDuplicates,
        totalStale: loop.totalStale,
        tpsIn: loop.tpsIn,
        tpsOut: loop.tpsOut,
        sparkline: { tpsIn: [], tpsOut: [] },
        partitions,
      };
    }),
  );
  return { length: lengths.reduce((n, l) => n + l, 0), groups };
}
