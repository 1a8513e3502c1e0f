import type { RawEntry, StreamsClient } from '../../redis/stream-roles';
import type { LoopContext } from '../context';

/**
 * Delivery counts of entries this consumer holds, from one XPENDING range per batch (more only
 * when the range holds other pending entries of ours). `entries` must be in stream order.
 */
export async function deliveryCounts(
  context: Pick<LoopContext, 'stream' | 'group' | 'consumer'>,
  client: Pick<StreamsClient, 'pending'>,
  entries: readonly RawEntry[],
): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  if (entries.length === 0) return counts;
  const { stream, group, consumer } = context;
  const wanted = entries.length;
  const end = entries[entries.length - 1].entryId;
  let start = entries[0].entryId;
  for (;;) {
    const rows = await client.pending(stream, group, { start, end, count: wanted, consumer });
    for (const row of rows) counts.set(row.entryId, row.deliveries);
    if (rows.length < wanted || entries.every((e) => counts.has(e.entryId))) return counts;
    start = `(${rows[rows.length - 1].entryId}`;
  }
}
