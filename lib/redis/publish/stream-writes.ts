import type { ChainableCommander, Cluster, Redis } from 'ioredis';
import { isCluster, keySlot, type CommandLink } from '../connection';
import { IDEMPOTENT_ADD_SCRIPT, IDEMPOTENT_ADD_SHA } from './idempotent-add.script';
import { idempotencyKey } from '../package-keys';
import type { IdempotentAdd, IdempotentItem, IdempotentWrites } from './idempotent-roles';
import { IDMP_ADD_SCRIPT, IDMP_ADD_SHA } from './idmp-add.script';
import type { IdmpStreams } from './idmp-streams';
import { idmpAddOf, idmpEntryIds, idmpPipelinedCommand, idmpScriptArgs } from './idmp-writes';
import { weakest, writeThenWait, type WritePipeline } from './replicated-write';
import type {
  DurableWrites,
  KeyExpiry,
  ReplicatedWrite,
  StreamWrites,
  WriteItem,
} from '../stream-roles';

/** One command of a pipeline: its name, then its arguments. */
type Command = Array<string | number>;

/**
 * {@link StreamWrites} and {@link DurableWrites} on one link: XADD alone or pipelined (one
 * pipeline per hash slot on a Cluster, all in flight at once), XADDs with a WAIT, XDEL.
 * Idempotent writes go through the server's IDMP where `idmp` says a stream takes them, else
 * through the idempotent-add script.
 */
export class RedisStreamWrites implements StreamWrites, DurableWrites, IdempotentWrites, KeyExpiry {
  constructor(
    private readonly link: CommandLink,
    private readonly idmp?: IdmpStreams,
  ) {}

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
      exec: (part, tail, asking) => this.exec(part.map(xaddOf), tail, asking),
      entryIds: (writes) => writes.map((result) => this.entryId(result)),
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
    if (await this.idmp?.takes(stream, windowMs)) {
      const first = await this.addIdmp(stream, items, maxLen);
      if (first) return first.map((entryId) => ({ entryId }));
      // the stream was deleted since it was set up: set it up again, then the same writes
      this.idmp!.forget(stream);
      if (await this.idmp!.takes(stream, windowMs)) {
        const again = await this.addIdmp(stream, items, maxLen);
        if (again) return again.map((entryId) => ({ entryId }));
        throw goneError(stream);
      }
    }
    const args = idempotentArgs(stream, items, windowMs, maxLen, false);
    const reply = await this.link.sendScript(IDEMPOTENT_ADD_SCRIPT, IDEMPOTENT_ADD_SHA, args);
    return idempotentAnswers(reply);
  }

  async addIdempotentReplicated(
    stream: string,
    items: readonly IdempotentItem[],
    windowMs: number,
    maxLen: number | undefined,
    replicas: number,
    timeoutMs: number,
  ): Promise<ReplicatedWrite> {
    if (items.length === 0) return { entryIds: [], acknowledged: replicas };
    const redis = this.link.connection;
    if (await this.idmp?.takes(stream, windowMs)) {
      // NOTE: a repeat XADD ... IDMP is replicated as it was sent (the replica finds the id and
      // writes nothing too), so the WAIT after it counts the replicas that have the first write
      const native: WritePipeline<IdempotentItem> = {
        exec: (part, tail, asking) =>
          this.exec([idmpPipelinedCommand(stream, part, maxLen)], tail, asking),
        entryIds: ([[err, reply]]) => {
          if (err) throw this.link.monitor.explain(err, items.length === 1 ? 'XADD' : 'EVAL');
          const entryIds = idmpEntryIds(reply);
          if (entryIds) return entryIds;
          this.idmp?.forget(stream);
          throw goneError(stream);
        },
        cluster: isCluster(redis) ? redis : undefined,
      };
      return writeThenWait(native, items, replicas, timeoutMs);
    }
    const args = (part: readonly IdempotentItem[]) =>
      idempotentArgs(stream, part, windowMs, maxLen, true);
    // NOTE: the script rewrites a repeat's index key (`touch`) because Redis 8 and Valkey
    // answer a WAIT after a command that wrote nothing at once (only the connection's own
    // earlier writes count); Redis 7.0 counted up to the master's offset of that moment.
    // The script call then the WAIT, the call always with the script's text (EVAL): EVALSHA's
    // NOSCRIPT (a restarted server, a Cluster node the text never went to) would come back with
    // the WAIT already run for nothing, up to replicaTimeoutMs, before the write could be sent.
    const pipeline: WritePipeline<IdempotentItem> = {
      exec: (part, tail, asking) =>
        this.exec([['EVAL', IDEMPOTENT_ADD_SCRIPT, ...args(part)]], tail, asking),
      entryIds: ([result]) => {
        const [err, reply] = result;
        if (err) throw this.link.monitor.explain(err, 'EVAL');
        return idempotentAnswers(reply).map((answer) => answer.entryId);
      },
      cluster: isCluster(redis) ? redis : undefined,
    };
    return writeThenWait(pipeline, items, replicas, timeoutMs);
  }

  async expire(key: string, ttlMs: number): Promise<boolean> {
    return Number(await this.link.send(['PEXPIRE', key, ttlMs])) === 1;
  }

  async remove(stream: string, ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    return Number(await this.link.send(['XDEL', stream, ...ids]));
  }

  /**
   * `items` through IDMP in one command: the XADD for one item, the IDMP-add script for more (a
   * pipeline of many XADDs costs the client more); `null` when the stream does not exist.
   */
  private async addIdmp(
    stream: string,
    items: readonly IdempotentItem[],
    maxLen: number | undefined,
  ): Promise<string[] | null> {
    const reply =
      items.length === 1
        ? await this.link.send(idmpAddOf(stream, items[0], maxLen))
        : await this.link.sendScript(
            IDMP_ADD_SCRIPT,
            IDMP_ADD_SHA,
            idmpScriptArgs(stream, items, maxLen),
          );
    return idmpEntryIds(reply);
  }

  private async addPipelined(items: readonly WriteItem[]): Promise<string[]> {
    const results = (await this.exec(items.map(xaddOf)))!;
    return results.map((result) => this.entryId(result));
  }

  /** The entry id of one XADD's [error, reply] in a pipeline; its error, explained, is thrown. */
  private entryId([err, id]: [Error | null, unknown]): string {
    if (err) throw this.link.monitor.explain(err, 'XADD');
    return String(id);
  }

  /**
   * Sends `commands` (and `tail`, if any) as one pipeline; one [error, reply] each. With `asking`
   * (a Cluster node's `host:port`, an ASK's target) to that node, each command after an ASKING
   * (the ASKING replies left out); `undefined`: no connection to that node known.
   * NOTE: no command deadline here: a publish has its own (`publishTimeoutMs`, publish-deadline).
   */
  private async exec(
    commands: readonly Command[],
    tail?: Command,
    asking?: string,
  ): Promise<Array<[Error | null, unknown]> | undefined> {
    const redis = this.link.connection;
    const node =
      asking === undefined ? redis : isCluster(redis) ? nodeAt(redis, asking) : undefined;
    if (!node) return undefined;
    const pipeline: ChainableCommander = node.pipeline();
    for (const [command, ...args] of commands) {
      if (asking !== undefined) pipeline.asking();
      pipeline.call(String(command), ...args);
    }
    if (tail) pipeline.call(String(tail[0]), ...tail.slice(1));
    const results =
      (await pipeline.exec().catch((err: unknown) => {
        throw this.link.monitor.explain(err, String(commands[0]?.[0] ?? 'XADD'));
      })) ?? [];
    // with ASKING: [ASKING, command] per command, then the tail
    return asking === undefined
      ? results
      : results.filter((_, i) => i >= commands.length * 2 || i % 2 === 1);
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

/** The XADD of one write item. */
function xaddOf(item: WriteItem): Command {
  return addArgs(item.stream, item.fields, item.maxLen);
}

/** Why an IDMP write wrote nothing: its stream was deleted meanwhile (twice, for a publish). */
function goneError(stream: string): Error {
  return new Error(`${stream} was deleted while it was written; nothing was written to it`);
}

/**
 * The idempotent-add script's numkeys, KEYS and ARGV (idempotent-add.script.ts); `touch` rewrites
 * a repeat's index key so a WAIT after the call covers the first write.
 */
function idempotentArgs(
  stream: string,
  items: readonly IdempotentItem[],
  windowMs: number,
  maxLen: number | undefined,
  touch: boolean,
): Command {
  const keys = [stream, ...items.map((item) => idempotencyKey(stream, item.id))];
  const args: Command = [keys.length, ...keys, windowMs, maxLen ?? '', touch ? '1' : ''];
  for (const item of items) args.push(item.fields.length, ...item.fields);
  return args;
}

/** The script's reply: an entry id per item, in order. */
function idempotentAnswers(reply: unknown): IdempotentAdd[] {
  return (reply as unknown[]).map((entryId) => ({ entryId: String(entryId) }));
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
