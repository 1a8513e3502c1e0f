import type { ResolvedHandlerOptions } from '../config/handler-definitions';
import { EchoStreamConfigError } from '../errors/echo-stream-config.error';
import type { PartitionLeases } from '../redis/stream-roles';

/**
 * Stores the partition count of every partitioned stream of `planned` unless one is stored (SET
 * NX), and fails when a stored count differs (docs/partitions.md "Partition count"): a handler
 * with another count would read partitions its producers do not write, or miss some.
 * @throws EchoStreamConfigError naming the stream, the stored count and the configured one.
 */
export async function checkPartitionCounts(
  leases: PartitionLeases,
  planned: ReadonlyArray<{
    definition: { stream: string; name: string };
    options: Pick<ResolvedHandlerOptions, 'partitions'>;
  }>,
): Promise<void> {
  for (const { definition, options } of planned) {
    if (options.partitions === null) continue;
    const stored = await leases.ensureCount(definition.stream, options.partitions);
    if (stored !== options.partitions)
      throw partitionCountError(definition.stream, stored, options.partitions, definition.name);
  }
}

/** The error of a partition count that differs from the stored one. */
export function partitionCountError(
  stream: string,
  stored: number,
  configured: number,
  who: string,
): EchoStreamConfigError {
  return new EchoStreamConfigError(
    `${who}: stream '${stream}' is stored with ${stored} partition(s), configured with ` +
      `${configured}; the count of a partitioned stream is fixed (docs/partitions.md "Partition count")`,
  );
}
