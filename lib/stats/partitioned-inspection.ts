import { entryIdMs } from '../codec/entry-id';
import { partitionStreamOf } from '../codec/partition-key';
import type {
  GroupConsumerInfo,
  GroupInspection,
  PartitionInspection,
} from '../interfaces/consumer-snapshot.interface';
import { isNoPermError } from '../redis/redis-errors';
import type { GroupInfo, PartitionLeases, StreamsClient } from '../redis/stream-roles';
import type { DeadLetterCounts } from './dead-letter-counter';

/** What the inspection of a partitioned stream's group reads. */
export type PartitionedInspectionClient = Pick<
  StreamsClient,
  'groups' | 'length' | 'consumers' | 'pending'
>;

/**
 * The stored partition count of `stream` (`null`: a plain stream), for a view that must tell; a
 * count the ACL refuses to read (`NOPERM`) reads as none, so a plain stream's view still works.
 */
export async function storedCountOf(
  leases: Pick<PartitionLeases, 'storedCount'>,
  stream: string,
): Promise<number | null> {
  try {
    return await leases.storedCount(stream);
  } catch (err) {
    if (isNoPermError(err)) return null;
    throw err;
  }
}

/** The partitions of a partitioned stream as one read found them (every group's figures). */
export interface PartitionsRead {
  /** The partitioned stream's own name. */
  readonly stream: string;
  /** Its partitions' streams, by index (`<stream>:p:<i>`). */
  readonly streams: readonly string[];
  /** XLEN of each partition, by index. */
  readonly lengths: readonly number[];
  /** XINFO GROUPS of each partition, by index. */
  readonly groupsOf: ReadonlyArray<readonly GroupInfo[]>;
}

/** Reads the length and the groups of each of the `count` partitions of `stream`. */
export async function readPartitions(
  client: Pick<StreamsClient, 'groups' | 'length'>,
  stream: string,
  count: number,
): Promise<PartitionsRead> {
  const streams = Array.from({ length: count }, (_, i) => partitionStreamOf(stream, i));
  const [lengths, groupsOf] = await Promise.all([
    Promise.all(streams.map((s) => client.length(s))),
    Promise.all(streams.map((s) => client.groups(s))),
  ]);
  return { stream, streams, lengths, groupsOf };
}

/** The group names on any partition, sorted. */
export function partitionGroups(read: PartitionsRead): string[] {
  return [...new Set(read.groupsOf.flatMap((groups) => groups.map((g) => g.name)))].sort();
}

/**
 * A group of the partitioned stream `stream` (`count` partitions), read from Redis
 * (docs/partitions.md "Visible"): per partition its lease (owner, generation, time left), length,
 * pending, lag, oldest pending entry and dead letters; the group's figures their sums (`lag`
 * `null` when a partition's is). A partition the group does not exist on counts as nothing
 * pending, lag unknown. `letters`: the stream's dead letters counted (`null`: no dead-letter
 * stream).
 */
export async function inspectPartitioned(
  client: PartitionedInspectionClient,
  leases: Pick<PartitionLeases, 'table'>,
  stream: string,
  group: string,
  count: number,
  letters: DeadLetterCounts | null,
): Promise<GroupInspection> {
  const read = await readPartitions(client, stream, count);
  return inspectPartitionGroup(client, leases, read, group, letters);
}

/** {@link inspectPartitioned} on partitions already read (one read for every group of them). */
export async function inspectPartitionGroup(
  client: Pick<StreamsClient, 'consumers' | 'pending'>,
  leases: Pick<PartitionLeases, 'table'>,
  read: PartitionsRead,
  group: string,
  letters: DeadLetterCounts | null,
  now: number = Date.now(),
): Promise<GroupInspection> {
  const { streams, lengths } = read;
  const infos = read.groupsOf.map((groups) => groups.find((g) => g.name === group));
  const [rows, consumersOf, oldestOf] = await Promise.all([
    leases.table(read.stream, group, streams.length),
    Promise.all(
      streams.map((s, i) => (infos[i] ? client.consumers(s, group) : Promise.resolve([]))),
    ),
    Promise.all(
      streams.map(async (s, i) => {
        if (!infos[i] || infos[i].pending === 0) return null;
        const [oldest] = await client.pending(s, group, { start: '-', end: '+', count: 1 });
        return oldest ? Math.max(0, now - entryIdMs(oldest.entryId)) : null;
      }),
    ),
  ]);
  const partitions: PartitionInspection[] = rows.map(({ partition, owner, generation, leftMs }) => {
    const info = infos[partition];
    return {
      partition,
      stream: streams[partition],
      owner,
      generation,
      leaseLeftMs: leftMs,
      length: lengths[partition],
      pending: info?.pending ?? 0,
      lag: info ? info.lag : null,
      oldestPendingMs: oldestOf[partition],
      deadLetters: letters?.byPartition.get(partition) ?? 0,
    };
  });
  const lags = partitions.map((p) => p.lag);
  const oldest = partitions.flatMap((p) => (p.oldestPendingMs === null ? [] : [p.oldestPendingMs]));
  return {
    pending: partitions.reduce((sum, p) => sum + p.pending, 0),
    lag: lags.some((l) => l === null) ? null : lags.reduce((sum: number, l) => sum + (l ?? 0), 0),
    consumers: mergeConsumers(consumersOf.flat()),
    oldestPendingMs: oldest.length > 0 ? Math.max(...oldest) : null,
    deadLetters: letters?.total ?? 0,
    partitions,
  };
}

/** One row per consumer name: its pending entries summed over the partitions, its least idle time. */
function mergeConsumers(all: readonly GroupConsumerInfo[]): GroupConsumerInfo[] {
  const byName = new Map<string, GroupConsumerInfo>();
  for (const c of all) {
    const seen = byName.get(c.name);
    byName.set(
      c.name,
      seen
        ? {
            name: c.name,
            pending: seen.pending + c.pending,
            idleMs: Math.min(seen.idleMs, c.idleMs),
          }
        : { name: c.name, pending: c.pending, idleMs: c.idleMs },
    );
  }
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
