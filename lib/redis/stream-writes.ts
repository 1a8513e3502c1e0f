import type { ChainableCommander, Cluster, Redis } from 'ioredis';
import { isCluster, keySlot } from './cluster-routing';
import type { CommandLink } from './command-link';
import { IDEMPOTENT_ADD_SCRIPT, IDEMPOTENT_ADD_SHA, idempotencyKey } from './idempotent-add.script';
import { isNoScriptError } from './redis-errors';
import { weakest, writeThenWait, type WritePipeline } from './replicated-write';
import type {
  DurableWrites,
  IdempotentAdd,
  IdempotentItem,
  IdempotentWrites,
  ReplicatedWrite,
  StreamWrites,
  WriteItem,
} from './stream-roles';

/**
 * {@link StreamWrites} and {@link DurableWrites} on one link: XADD alone or pipelined (one
 * pipeline per hash slot on a Cluster, all in flight at once), XADDs with a WAIT, XDEL.
 */
export class RedisStreamWrites implements StreamWrites, DurableWrites, IdempotentWrites {
  constructor(private readonly link: CommandLink) {}

  async add(stream: string, fields: readonly string[], maxLen?: number): Promise<string> {
    return String(await this.link.send(addArgs(stream, fields, maxLen)));
  }

  async addMany(items: readonly WriteItem[]): Promise<string[]> {
    if (items.length === 0) return [];
    if (!isCluster(this.link.connection) || items.length === 1) return this.addPipelined(items);
    // A Cluster pipeline must stay within one slot: one pipeline per slot, all in flight at once.
    const { entryIds } = await perSlot(items, async (part) => ({
      entryIds: await this.addPipelined(part),
    }));
    return entryIds;
  }

  async addReplicated(
    items: readonly WriteItem[],
    replicas: number,
    timeoutMs: number,
  ): Promise<ReplicatedWrite> {
    if (items.length === 0) return { entryIds: [], acknowledged: replicas };
    const redis = this.link.connection;
    const pipeline: WritePipeline = {
      exec: (part, tail, asking) =>
        asking === undefined ? this.execWrites(part, tail) : this.execAsking(asking, part, tail),
      entryId: (result) => this.entryId(result),
      cluster: isCluster(redis) ? redis : undefined,
    };
    const send = (part: readonly WriteItem[]) => writeThenWait(pipeline, part, replicas, timeoutMs);
    if (!pipeline.cluster) return send(items);
    const { entryIds, outcomes } = await perSlot(items, send);
    return weakest(entryIds, outcomes);
  }

  async addIdempotent(
    stream: string,
    items: readonly IdempotentItem[],
    windowMs: number,
    maxLen?: number,
  ): Promise<IdempotentAdd[]> {
    if (items.length === 0) return [];
    const keys = [stream, ...items.map((item) => idempotencyKey(stream, item.id))];
    const args: Array<string | number> = [keys.length, ...keys, windowMs, maxLen ?? ''];
    for (const item of items) args.push(item.fields.length, ...item.fields);
    let reply: unknown;
    try {
      reply = await this.link.send(['EVALSHA', IDEMPOTENT_ADD_SHA, ...args]);
    } catch (err) {
      if (!isNoScriptError(err)) throw err;
      reply = await this.link.send(['EVAL', IDEMPOTENT_ADD_SCRIPT, ...args]);
    }
    const flat = reply as unknown[];
    return items.map((_, i) => ({
      entryId: String(flat[2 * i]),
      written: Number(flat[2 * i + 1]) === 1,
    }));
  }

  async remove(stream: string, ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    return Number(await this.link.send(['XDEL', stream, ...ids]));
  }

  private async addPipelined(items: readonly WriteItem[]): Promise<string[]> {
    const results = await this.execWrites(items);
    return results.map((result) => this.entryId(result));
  }

  /** The entry id of one XADD's [error, reply] in a pipeline; its error, explained, is thrown. */
  private entryId([err, id]: [Error | null, unknown]): string {
    if (err) throw this.link.monitor.explain(err, 'XADD');
    return String(id);
  }

  /**
   * Sends the XADDs of `items` (and `tail`, if any) as one pipeline; one [error, reply] each.
   * NOTE: no command deadline here: a publish has its own (`publishTimeoutMs`, publish-deadline).
   */
  private async execWrites(
    items: readonly WriteItem[],
    tail?: Array<string | number>,
  ): Promise<Array<[Error | null, unknown]>> {
    return this.run(this.link.connection.pipeline(), items, tail, false);
  }

  /**
   * As {@link execWrites}, to the Cluster node at `address` (an ASK's target), each XADD after
   * an ASKING; the ASKING replies are left out. `undefined`: no connection to that node known.
   */
  private async execAsking(
    address: string,
    items: readonly WriteItem[],
    tail: Array<string | number>,
  ): Promise<Array<[Error | null, unknown]> | undefined> {
    const redis = this.link.connection;
    const node = isCluster(redis) ? nodeAt(redis, address) : undefined;
    if (!node) return undefined;
    return this.run(node.pipeline(), items, tail, true);
  }

  private async run(
    pipeline: ChainableCommander,
    items: readonly WriteItem[],
    tail: Array<string | number> | undefined,
    asking: boolean,
  ): Promise<Array<[Error | null, unknown]>> {
    for (const item of items) {
      const [command, ...args] = addArgs(item.stream, item.fields, item.maxLen);
      if (asking) pipeline.asking();
      pipeline.call(String(command), ...args);
    }
    if (tail) pipeline.call(String(tail[0]), ...tail.slice(1));
    const results =
      (await pipeline.exec().catch((err: unknown) => {
        throw this.link.monitor.explain(err, 'XADD');
      })) ?? [];
    // with ASKING: [ASKING, XADD] per item, then the tail
    return asking ? results.filter((_, i) => i >= items.length * 2 || i % 2 === 1) : results;
  }
}

/**
 * Sends `items` in one pipeline per hash slot of their streams (a Cluster pipeline must stay
 * within one slot), all in flight at once; the entry ids come back in item order, with each
 * pipeline's outcome.
 */
async function perSlot<T extends { entryIds: string[] }>(
  items: readonly WriteItem[],
  send: (part: WriteItem[]) => Promise<T>,
): Promise<{ entryIds: string[]; outcomes: T[] }> {
  const bySlot = new Map<number, number[]>();
  items.forEach((item, i) => {
    const slot = keySlot(item.stream);
    const group = bySlot.get(slot);
    if (group) group.push(i);
    else bySlot.set(slot, [i]);
  });
  const entryIds = new Array<string>(items.length);
  const outcomes = await Promise.all(
    [...bySlot.values()].map(async (indexes) => {
      const got = await send(indexes.map((i) => items[i]));
      indexes.forEach((i, j) => (entryIds[i] = got.entryIds[j]));
      return got;
    }),
  );
  return { entryIds, outcomes };
}

function addArgs(
  stream: string,
  fields: readonly string[],
  maxLen?: number,
): Array<string | number> {
  const args: Array<string | number> = ['XADD', stream];
  if (maxLen !== undefined) args.push('MAXLEN', '~', maxLen);
  args.push('*', ...fields);
  return args;
}

/** The connection `cluster` holds to the node at `address` (`host:port`), if any. */
function nodeAt(cluster: Cluster, address: string): Redis | undefined {
  return cluster.nodes().find((node) => `${node.options.host}:${node.options.port}` === address);
}
