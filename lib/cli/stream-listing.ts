import { streamsByName } from '../stats/partition-pages';
import { partitionGroups, readPartitions, storedCountOf } from '../stats/partitioned-inspection';
import type { CommandContext } from './command-context';
import { table } from './format';

/** A row of `streams`: `partitions` only on a partitioned stream. */
interface StreamRow {
  stream: string;
  length: number;
  groups: number;
  partitions?: number;
}

/**
 * `streams`: the stream keys on the server (SCAN TYPE stream) with their length and number of
 * groups; a partitioned stream's partitions as one row of its own name (docs/partitions.md
 * "Visible"): its partitions' lengths summed, the groups on any of them, its partition count.
 */
export async function listStreams(ctx: CommandContext): Promise<void> {
  const names = new Set<string>();
  let cursor = '0';
  do {
    const page = await ctx.browser.scanStreams(cursor, 1000);
    page.keys.forEach((key) => names.add(key));
    cursor = page.cursor;
  } while (cursor !== '0');
  const leases = ctx.client.partitions;
  const byName = await streamsByName(names, (s) =>
    leases ? storedCountOf(leases, s) : Promise.resolve(null),
  );
  const streams = await Promise.all(
    byName.map(async ({ stream, partitions }): Promise<StreamRow> => {
      if (partitions !== null) {
        const read = await readPartitions(ctx.client, stream, partitions);
        const length = read.lengths.reduce((sum, n) => sum + n, 0);
        return { stream, length, groups: partitionGroups(read).length, partitions };
      }
      const [length, groups] = await Promise.all([
        ctx.client.length(stream),
        ctx.client.groups(stream),
      ]);
      return { stream, length, groups: groups.length };
    }),
  );
  if (ctx.json) return ctx.out(JSON.stringify(streams));
  if (streams.length === 0) return ctx.out('no stream keys on this server');
  const partitioned = streams.some((s) => s.partitions !== undefined);
  ctx.out(
    table(
      ['STREAM', 'LENGTH', 'GROUPS', ...(partitioned ? ['PARTITIONS'] : [])],
      streams.map((s) => [
        s.stream,
        s.length,
        s.groups,
        ...(partitioned ? [s.partitions ?? '-'] : []),
      ]),
      ['LENGTH', 'GROUPS', 'PARTITIONS'],
    ),
  );
}
