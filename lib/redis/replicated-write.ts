import type { Cluster } from 'ioredis';
import type { ReplicatedWrite, WriteItem } from './stream-roles';

/** What a durable write needs of the client that owns the connection. */
export interface WritePipeline {
  /** Sends the XADDs of `items`, then `tail`, as one pipeline; one [error, reply] each. */
  exec(
    items: readonly WriteItem[],
    tail: Array<string | number>,
  ): Promise<Array<[Error | null, unknown]>>;
  /** The entry id of one XADD's [error, reply] (throws the explained error). */
  entryId(result: [Error | null, unknown]): string;
  /** The Cluster the pipeline goes to, if it is one (its slot map may need a refresh). */
  cluster: Cluster | undefined;
}

/** At most this many sends of one WAIT pipeline whose XADDs all come back MOVED. */
const MAX_WAIT_REDIRECTS = 3;

/**
 * One pipeline (one slot on a Cluster): the XADDs, then `WAIT replicas timeoutMs` as its LAST
 * command, so the WAIT counts the replicas that have these very writes (WAIT is per connection
 * and per node). A reply error of an XADD rejects (nothing of that entry was written); the WAIT's
 * answer (or its reply error) is returned, never thrown: the entries are written by then.
 */
export async function writeThenWait(
  pipeline: WritePipeline,
  items: readonly WriteItem[],
  replicas: number,
  timeoutMs: number,
): Promise<ReplicatedWrite> {
  for (let attempt = 1; ; attempt++) {
    const results = await pipeline.exec(items, ['WAIT', replicas, timeoutMs]);
    const waited = results[results.length - 1];
    const writes = results.slice(0, -1);
    // NOTE: ioredis re-sends a Cluster pipeline after MOVED only when no write in it
    // succeeded; the keyless WAIT always answers (on whichever node got the pipeline), so a
    // pipeline sent on a stale slot map (a failover promoted a replica, a slot moved) comes
    // back with every XADD MOVED. Nothing was written: learn the new map and send it again.
    if (
      pipeline.cluster &&
      attempt < MAX_WAIT_REDIRECTS &&
      writes.length > 0 &&
      writes.every(([err]) => isMoved(err))
    ) {
      await refreshSlots(pipeline.cluster);
      continue;
    }
    const entryIds = writes.map((result) => pipeline.entryId(result));
    const [waitErr, count] = waited;
    if (waitErr) return { entryIds, acknowledged: 0, waitError: waitErr };
    return { entryIds, acknowledged: Number(count) };
  }
}

/** The pipelines of one durable write: the weakest one is what the call can promise. */
export function weakest(entryIds: string[], outcomes: readonly ReplicatedWrite[]): ReplicatedWrite {
  const acknowledged = Math.min(...outcomes.map((o) => o.acknowledged));
  const waitError = outcomes.find((o) => o.waitError)?.waitError;
  return waitError ? { entryIds, acknowledged, waitError } : { entryIds, acknowledged };
}

/**
 * A MOVED reply: the command was not executed, another node serves its slot now. (An ASK, a slot
 * half migrated, is not followed for a WAIT pipeline: it rejects as the reply it is, nothing
 * written; the slot map would not change and the next publish after the migration goes through.)
 */
function isMoved(err: Error | null): boolean {
  return err !== null && err.message.startsWith('MOVED ');
}

/** CLUSTER SLOTS again (ioredis coalesces concurrent refreshes); a failed refresh is not fatal. */
function refreshSlots(cluster: Cluster): Promise<void> {
  return new Promise((resolve) => cluster.refreshSlotsCache(() => resolve()));
}
