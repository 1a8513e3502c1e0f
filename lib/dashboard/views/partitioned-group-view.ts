import type { DeadLetterCounts } from '../../stats/dead-letter-counter';
import type { ConsumerSnapshot } from '../../interfaces/consumer-snapshot.interface';
import type { Browsing, PartitionLeases, StreamsClient } from '../../redis/stream-roles';
import {
  inspectPartitionGroup,
  partitionGroups,
  readPartitions,
  type PartitionsRead,
} from '../../stats/partitioned-inspection';
import type { GroupView, PartitionView, StreamView } from './dashboard-views';
import type { RateHistory } from './rate-history';

/** What the row of a partitioned stream reads. */
export interface PartitionedViewSources {
  client: StreamsClient & Browsing;
  leases: Pick<PartitionLeases, 'table'>;
  /** The stream's dead letters counted (`ConsumerStats.deadLetterCounts`). */
  letters(stream: string, count: number): Promise<DeadLetterCounts>;
  rates: RateHistory;
}

/**
 * The overview row of a partitioned stream (docs/partitions.md "Visible"), which has no Redis
 * stream of its name: its length and dead letters those of its partitions summed, and one group
 * row per group on any partition (and of this app's loops): pending, lag, oldest pending and
 * dead letters summed over the partitions, rates (this app's loop's, else the partitions'
 * entries added and read per second), the owners with their partitions, and per partition its
 * owner, lease, length, pending, lag and dead letters.
 */
export async function partitionedStreamView(
  sources: PartitionedViewSources,
  stream: string,
  count: number,
  loops: readonly ConsumerSnapshot[],
  now: number,
): Promise<StreamView> {
  const { client, rates } = sources;
  const read = await readPartitions(client, stream, count);
  const mine = loops.filter((l) => l.stream === stream && l.partitions !== undefined);
  const names = [...new Set([...partitionGroups(read), ...mine.map((l) => l.group)])].sort();
  const external = names.some((name) => !mine.some((l) => l.group === name));
  const [letters, pausedSince, counters] = await Promise.all([
    sources.letters(stream, count),
    client.pauses
      ? client.pauses.pausedSince(names.map((group) => ({ stream, group })))
      : names.map(() => null),
    // the partitions' counters, for the rates of groups this app runs no loop of
    external ? Promise.all(read.streams.map((s) => client.browser().counters(s))) : null,
  ]);
  const entriesAdded = counters && sumOrNull(counters.map((c) => c.entriesAdded));
  const streamIn = rates.rateOf(`${stream}\u0000in`, entriesAdded, now);
  const groups = await Promise.all(
    names.map(async (group, index): Promise<GroupView> => {
      const inspection = await inspectPartitionGroup(
        client,
        sources.leases,
        read,
        group,
        letters,
        now,
      );
      const loop = mine.find((l) => l.group === group);
      const tpsIn = loop ? loop.tpsIn : streamIn;
      const tpsOut = loop
        ? loop.tpsOut
        : rates.rateOf(
            `${stream}\u0000${group}\u0000read`,
            counters &&
              sumOrNull(counters.map((c, i) => entriesRead(read, i, group, c.entriesRead))),
            now,
          );
      const partitions: PartitionView[] = (inspection.partitions ?? []).map((p) => {
        // this app's loop of the partition, when this process owns it
        const here = loop?.partitions?.find((o) => o.partition === p.partition);
        return {
          partition: p.partition,
          owner: p.owner,
          generation: p.generation,
          leftMs: p.leaseLeftMs,
          length: p.length,
          pending: p.pending,
          lag: p.lag,
          oldestPendingMs: p.oldestPendingMs,
          deadLetters: p.deadLetters,
          state: here?.state ?? null,
          tpsIn: here?.tpsIn ?? null,
          tpsOut: here?.tpsOut ?? null,
        };
      });
      // the owners, and any consumer still holding entries of a partition it no longer owns
      const owners = new Set(partitions.flatMap((p) => (p.owner === null ? [] : [p.owner])));
      const since = pausedSince[index];
      return {
        group,
        state: loop?.state ?? null,
        pausedSince: since === null || since === undefined ? null : new Date(since).toISOString(),
        handler: loop?.handler ?? null,
        consumers: [
          ...[...owners].map(
            (name) =>
              inspection.consumers.find((c) => c.name === name) ?? { name, pending: 0, idleMs: 0 },
          ),
          ...inspection.consumers.filter((c) => !owners.has(c.name) && c.pending > 0),
        ],
        lastDeliveredId: '',
        pending: inspection.pending,
        lag: inspection.lag,
        oldestPendingMs: inspection.oldestPendingMs,
        deadLetters: letters.byGroup.get(group) ?? 0,
        totalDuplicates: loop?.totalDuplicates ?? null,
        totalStale: loop?.totalStale ?? null,
        totalFenced: loop?.totalFenced ?? null,
        tpsIn,
        tpsOut,
        sparkline:
          tpsIn !== null && tpsOut !== null
            ? rates.record(stream, group, tpsIn, tpsOut, now)
            : { tpsIn: [], tpsOut: [] },
        partitions,
      };
    }),
  );
  return {
    stream,
    length: read.lengths.reduce((sum, n) => sum + n, 0),
    groups,
    deadLetters: letters.total,
    deadLettersExact: letters.exact,
    entriesAdded,
  };
}

/** Entries of partition `index` read by `group`: 0 where the group is not, or never read. */
function entriesRead(
  read: PartitionsRead,
  index: number,
  group: string,
  counts: ReadonlyMap<string, number | null>,
): number | null {
  const info = read.groupsOf[index].find((g) => g.name === group);
  if (!info) return 0;
  return counts.get(group) ?? (info.lastDeliveredId === '0-0' ? 0 : null);
}

/** The sum; `null` when any is unknown. */
function sumOrNull(values: ReadonlyArray<number | null>): number | null {
  let sum = 0;
  for (const value of values) {
    if (value === null) return null;
    sum += value;
  }
  return sum;
}
