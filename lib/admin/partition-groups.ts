import { partitionStreamOf } from '../codec/partition-key';
import type { StreamsClient } from '../redis/stream-roles';

/**
 * The group names of a partitioned stream (docs/partitions.md "Pause"): every group that exists
 * on one of its partition streams (`<stream>:p:<i>`), sorted. `null` when `stream` has no stored
 * partition count (a plain stream, or none), or the client cannot partition.
 */
export async function partitionedGroupNames(
  client: Pick<StreamsClient, 'partitions' | 'groups'>,
  stream: string,
): Promise<string[] | null> {
  const count = client.partitions ? await client.partitions.storedCount(stream) : null;
  if (count === null) return null;
  const groupsOf = await Promise.all(
    Array.from({ length: count }, (_, i) => client.groups(partitionStreamOf(stream, i))),
  );
  return [...new Set(groupsOf.flatMap((gs) => gs.map((g) => g.name)))].sort();
}
