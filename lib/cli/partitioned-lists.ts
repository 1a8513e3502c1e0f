import { fieldsToRecord } from '../codec/codecs';
import { fieldsText } from '../codec/fields-text';
import type { RawEntry } from '../redis/stream-roles';
import {
  entriesAfter,
  entriesNewestFirst,
  PageCursorError,
  partitionCursorText,
  pendingAcross,
  pendingOfGroup,
  readPageCursor,
  type PartitionItem,
} from '../stats/partition-pages';
import { partitionGroups, readPartitions } from '../stats/partitioned-inspection';
import { CliError } from './cli-error';
import type { CommandContext } from './command-context';
import { duration, safeText, table } from './format';

// `pending` and `tail` of a partitioned stream by its own name (docs/partitions.md "Visible"):
// its partitions' lists merged in entry-id order (lib/stats/partition-pages.ts), each row with
// its partition; `--after <entry id>@<partition>` pages the merged PEL.

/** How long one wait of `tail --follow` parks (ms); Ctrl-C is seen between waits. */
const FOLLOW_BLOCK_MS = 1000;
/** Entries one wait of `tail --follow` takes per partition at most. */
const FOLLOW_COUNT = 100;

/** `pending <stream> <group>` of a partitioned stream of `partitions` partitions. */
export async function pendingOfPartitioned(
  ctx: CommandContext,
  stream: string,
  partitions: number,
  group: string,
  count: number,
  after: string | undefined,
): Promise<void> {
  const cursor = after === undefined ? undefined : cursorOf(after, partitions);
  const read = await readPartitions(ctx.client, stream, partitions);
  if (!partitionGroups(read).includes(group)) {
    throw new CliError(`stream '${stream}' has no group '${group}'`);
  }
  const pending = pendingOfGroup(read, group);
  const rows = await take(pendingAcross(ctx.client, read, group, count, cursor), count);
  const last = rows.at(-1);
  const next =
    rows.length === count && last ? partitionCursorText(last.item.entryId, last.partition) : null;
  if (ctx.json) {
    const entries = rows.map(({ partition, item }) => ({ ...item, partition }));
    return ctx.out(JSON.stringify({ stream, group, partitions, pending, entries, next }));
  }
  ctx.out(
    `${pending} pending in ${safeText(stream)}/${safeText(group)} (${partitions} partitions)`,
  );
  if (rows.length === 0) return;
  ctx.out(
    table(
      ['ENTRY', 'PARTITION', 'CONSUMER', 'IDLE', 'DELIVERIES'],
      rows.map(({ partition, item: r }) => [
        r.entryId,
        partition,
        r.consumer,
        duration(r.idleMs),
        r.deliveries,
      ]),
      ['PARTITION', 'IDLE', 'DELIVERIES'],
    ),
  );
  if (next) ctx.out(`next page: --after ${next}`);
}

/**
 * `tail <stream>` of a partitioned stream: its newest `count` entries across the partitions,
 * printed oldest first with their partition; `follow` then waits for new entries of every
 * partition (one XREAD BLOCK naming them all) until Ctrl-C.
 */
export async function tailOfPartitioned(
  ctx: CommandContext,
  stream: string,
  partitions: number,
  count: number,
  follow: boolean,
): Promise<void> {
  const read = await readPartitions(ctx.client, stream, partitions);
  const newest = (await take(entriesNewestFirst(ctx.browser, read, count), count)).reverse();
  if (ctx.json && !follow) return ctx.out(JSON.stringify(newest.map(shown)));
  print(ctx, newest);
  // where each partition's follow starts: after its newest entry shown, or, for a partition with
  // none shown, after the oldest shown (the page holds every entry newer than that)
  const lastIds = read.streams.map(() => newest[0]?.item.entryId ?? '0-0');
  for (const { partition, item } of newest) lastIds[partition] = item.entryId;
  while (follow && !ctx.signal.aborted) {
    print(
      ctx,
      await entriesAfter(ctx.browser, read.streams, lastIds, FOLLOW_BLOCK_MS, FOLLOW_COUNT),
    );
  }
}

function print(ctx: CommandContext, entries: ReadonlyArray<PartitionItem<RawEntry>>): void {
  for (const each of entries) {
    if (ctx.json) ctx.out(JSON.stringify(shown(each)));
    else {
      const { partition, item } = each;
      const text = item.fields === null ? '(deleted)' : fieldsText(item.fields);
      ctx.out(`${item.entryId}  p${partition}  ${safeText(text)}`);
    }
  }
}

function shown({ partition, item }: PartitionItem<RawEntry>) {
  const fields = item.fields === null ? null : fieldsToRecord(item.fields);
  return { entryId: item.entryId, partition, fields };
}

/** `--after` of a partitioned stream's PEL: `<entry id>@<partition>`, a partition it has. */
function cursorOf(after: string, partitions: number) {
  try {
    const { entryId, partition } = readPageCursor(after, partitions);
    return { entryId, partition: partition ?? 0 };
  } catch (err) {
    if (err instanceof PageCursorError) throw new CliError(`--${err.message}`);
    throw err;
  }
}

/** The first `count` items of `items` (the rest never read). */
async function take<T>(items: AsyncIterable<T>, count: number): Promise<T[]> {
  const out: T[] = [];
  if (count <= 0) return out;
  for await (const item of items) {
    out.push(item);
    if (out.length >= count) break;
  }
  return out;
}
