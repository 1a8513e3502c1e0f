import { partitionedGroupNames } from '../admin/partition-groups';
import type { CommandContext } from './command-context';
import { CliError } from './cli-error';

// What a command checks of the stream it is given before it reads: a clear one-line error for a
// missing key or a key of another type, never an empty answer.

/**
 * The group names of `stream`: of the Redis stream, or of a partitioned stream's partitions (its
 * loops read the pause flag of its name, docs/partitions.md "Pause").
 */
export async function groupNamesOf(ctx: CommandContext, stream: string): Promise<string[]> {
  const partitioned = await partitionedGroupNames(ctx.client, stream);
  if (partitioned) return partitioned;
  await requireStream(ctx, stream);
  return (await ctx.client.groups(stream)).map((g) => g.name);
}

/** A missing key or a key of another type is a clear one-line error, not an empty answer. */
export async function requireStream(ctx: CommandContext, stream: string): Promise<void> {
  const type = await ctx.browser.keyType(stream);
  if (type === 'none') throw new CliError(`no such key '${stream}'`);
  if (type !== 'stream') throw new CliError(`WRONGTYPE: '${stream}' is a ${type}, not a stream`);
}

/**
 * As `requireStream`, but a partitioned stream's own name (no key of that name, a stored
 * partition count) is fine too: its dead letters and history are read by that name.
 */
export async function requireStreamOrPartitioned(
  ctx: CommandContext,
  stream: string,
): Promise<void> {
  await partitionCountOf(ctx, stream);
}

/**
 * The partition count of `stream` when it is a partitioned stream's own name (no key of that
 * name, a stored count), else `null` once `requireStream` found it a stream.
 */
export async function partitionCountOf(
  ctx: CommandContext,
  stream: string,
): Promise<number | null> {
  const leases = ctx.client.partitions;
  if ((await ctx.browser.keyType(stream)) === 'none' && leases) {
    const count = await leases.storedCount(stream);
    if (count !== null) return count;
  }
  await requireStream(ctx, stream);
  return null;
}
