import type { Cluster } from 'ioredis';
import type { ReplicatedWrite, WriteItem } from '../stream-roles';

/**
 * What a durable write needs of the client that owns the connection: `T` is one item of the
 * write (a {@link WriteItem} for XADDs, an idempotent item for the idempotent-add script).
 */
export interface WritePipeline<T = WriteItem> {
  /**
   * Sends the writes of `items` (an XADD each, or one script call), then `tail`, as one
   * pipeline; one [error, reply] per command. With `asking` (a Cluster node's `host:port`, from
   * an ASK reply) the pipeline goes to that node, each write after its own ASKING; `undefined`
   * when no connection to that node is known.
   */
  exec(
    items: readonly T[],
    tail: Array<string | number>,
    asking?: string,
  ): Promise<Array<[Error | null, unknown]> | undefined>;
  /** The entry ids, one per item, from the writes' [error, reply]s (throws the explained error). */
  entryIds(writes: ReadonlyArray<[Error | null, unknown]>): string[];
  /** The Cluster the pipeline goes to, if it is one (its slot map may need a refresh). */
  cluster: Cluster | undefined;
}

/** At most this many sends of one WAIT pipeline whose XADDs all come back MOVED or ASK. */
const MAX_WAIT_REDIRECTS = 3;

/**
 * One pipeline (one slot on a Cluster): the writes, then `WAIT replicas timeoutMs` as its LAST
 * command, so the WAIT counts the replicas that have these very writes (WAIT is per connection
 * and per node). A reply error of an XADD rejects (nothing of that entry was written); the WAIT's
 * answer (or its reply error) is returned, never thrown: the entries are written by then.
 */
export async function writeThenWait<T>(
  pipeline: WritePipeline<T>,
  items: readonly T[],
  replicas: number,
  timeoutMs: number,
): Promise<ReplicatedWrite> {
  const tail = ['WAIT', replicas, timeoutMs];
  let asking: string | undefined;
  let previous: Array<[Error | null, unknown]> = [];
  for (let attempt = 1; ; attempt++) {
    const sent = await pipeline.exec(items, tail, asking);
    // `undefined`: the ASK's node is not one this client knows; the ASK stands as the answer
    const results = sent ?? previous;
    previous = results;
    asking = undefined;
    const redirect = pipeline.cluster !== undefined && attempt < MAX_WAIT_REDIRECTS && !!sent;
    const waited = results[results.length - 1];
    const writes = results.slice(0, -1);
    // NOTE: ioredis re-sends a Cluster pipeline after MOVED only when no write in it
    // succeeded; the keyless WAIT always answers (on whichever node got the pipeline), so a
    // pipeline sent on a stale slot map (a failover promoted a replica, a slot moved) comes
    // back with every XADD MOVED. Nothing was written: learn the new map and send it again.
    if (redirect && writes.length > 0 && writes.every(([err]) => isMoved(err))) {
      await refreshSlots(pipeline.cluster!);
      continue;
    }
    // An ASK: the slot is half migrated and these streams are on the importing node already
    // (or new). Nothing was written; the one pipeline goes to that node, each XADD after an
    // ASKING (good for that one command), the WAIT counting that node's replicas. The slot map
    // stays as it is: the slot still belongs to the old node until the migration ends.
    const target = redirect ? askTarget(writes) : undefined;
    if (target) {
      asking = target;
      continue;
    }
    const entryIds = pipeline.entryIds(writes);
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

/** A MOVED reply: the command was not executed, another node serves its slot now. */
function isMoved(err: Error | null): boolean {
  return err !== null && err.message.startsWith('MOVED ');
}

/**
 * The node every XADD of `writes` was sent to by ASK (`ASK <slot> <host:port>`: not executed, ask
 * that node), or `undefined` unless all of them were, to the same node (a pipeline stays within
 * one slot, so a mix means a write went through and nothing is sent again).
 */
function askTarget(writes: ReadonlyArray<[Error | null, unknown]>): string | undefined {
  const targets = new Set(
    writes.map(([err]) =>
      err !== null && err.message.startsWith('ASK ') ? err.message.split(' ')[2] : undefined,
    ),
  );
  const [target] = targets;
  return writes.length > 0 && targets.size === 1 ? target : undefined;
}

/** CLUSTER SLOTS again (ioredis coalesces concurrent refreshes); a failed refresh is not fatal. */
function refreshSlots(cluster: Cluster): Promise<void> {
  return new Promise((resolve) => cluster.refreshSlotsCache(() => resolve()));
}
