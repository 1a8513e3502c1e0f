import { Command, type Cluster, type Redis } from 'ioredis';
import { ConnectionMonitor } from './connection-monitor';
import {
  mapReply,
  parseEntry,
  parseReadReplies,
  parseReadReply,
  type RawEntry,
} from './reply-shapes';

export type { RawEntry } from './reply-shapes';
export type { ReplicatedWrite } from './replicated-write';
export { parseEntry } from './reply-shapes';
import { RATE_BUDGET_SCRIPT, RATE_BUDGET_SHA, rateBudgetKey } from './rate-budget.script';
import {
  weakest,
  writeThenWait,
  type ReplicatedWrite,
  type WriteItem,
  type WritePipeline,
} from './replicated-write';

/** An ioredis connection: a single node or a cluster. */
export type RedisConnection = Redis | Cluster;

/** One row of XPENDING's extended form. */
export interface PendingRow {
  entryId: string;
  consumer: string;
  idleMs: number;
  deliveries: number;
}

/** One page of XAUTOCLAIM. */
export interface AutoClaimPage {
  /** The cursor for the next call; `'0-0'` once the whole PEL was scanned. */
  cursor: string;
  entries: RawEntry[];
  /** Ids that were pending but no longer exist in the stream (Redis 7); Redis removed them from the PEL. */
  deletedIds: string[];
}

/** A query of the group's PEL. */
export interface PendingQuery {
  /** Only entries idle at least this long (the IDLE filter, Redis >= 6.2). */
  minIdleMs?: number;
  /** Range start, inclusive (`'-'`) or exclusive (`'(1-0'`). */
  start: string;
  end: string;
  count: number;
  consumer?: string;
}

/** Summary of one group (XINFO GROUPS). */
export interface GroupInfo {
  name: string;
  pending: number;
  lag: number | null;
  lastDeliveredId: string;
}

/** One consumer of a group (XINFO CONSUMERS). */
export interface ConsumerInfo {
  name: string;
  pending: number;
  idleMs: number;
}

/** What one refill of a group's rate budget granted. */
export interface RateBudgetGrant {
  /** Starts granted (0..want). */
  granted: number;
  /** Ms until the window of the grant ends (the server's clock). */
  windowLeftMs: number;
}

/** Raised when a command outlives its deadline; the connection was replaced. */
export class RedisDeadlineError extends Error {
  constructor(command: string, ms: number) {
    super(
      `${command} got no reply within ${ms} ms; the connection was dropped and is being replaced`,
    );
    this.name = 'RedisDeadlineError';
  }
}

/**
 * Everything the consumer engine, the producer and the admin ask of Redis. The engine depends on
 * this interface only, so unit tests can hand it a small fake.
 */
export interface StreamsClient {
  /** XGROUP CREATE ... MKSTREAM; `false` when the group already existed (BUSYGROUP). */
  createGroup(stream: string, group: string, startId: string): Promise<boolean>;
  /**
   * XREADGROUP. With `blockMs` the read parks on the server; a reply that does not come within
   * `blockMs` + a margin means a dead link: the connection is replaced and the call rejects.
   */
  readGroup(
    stream: string,
    group: string,
    consumer: string,
    count: number,
    id: string,
    blockMs?: number,
  ): Promise<RawEntry[]>;
  /**
   * One XREADGROUP of new entries (`>`) on several streams of one group (a shared read,
   * docs/scale.md "Many handlers"): parked up to `blockMs` like `readGroup`, without BLOCK when
   * `blockMs` is undefined. Entries by stream; streams that got nothing are absent. `interruptRead`
   * wakes it like a one-stream read; where it cannot (CLIENT ID refused by an ACL) the read parks
   * at most `uninterruptibleMs`.
   */
  readGroups(
    group: string,
    consumer: string,
    count: number,
    streams: readonly string[],
    blockMs?: number,
    uninterruptibleMs?: number,
  ): Promise<Map<string, RawEntry[]>>;
  /**
   * Wakes a parked `readGroup` (it resolves with no entries): CLIENT UNBLOCK, else (denied by an
   * ACL, no control connection) by dropping the connection when `mayDrop` (a stop), never for a
   * mere wake-up (a due retry then waits for the read's BLOCK timeout).
   * @default mayDrop true
   */
  interruptRead(mayDrop?: boolean): Promise<void>;
  ack(stream: string, group: string, ids: readonly string[]): Promise<number>;
  autoClaim(
    stream: string,
    group: string,
    consumer: string,
    minIdleMs: number,
    cursor: string,
    count: number,
  ): Promise<AutoClaimPage>;
  pending(stream: string, group: string, query: PendingQuery): Promise<PendingRow[]>;
  /** XPENDING's summary form: how many entries the group's PEL holds (all consumers). */
  pendingCount(stream: string, group: string): Promise<number>;
  /** XCLAIM with a min idle time, returning the bodies of the entries this call won. */
  claim(
    stream: string,
    group: string,
    consumer: string,
    minIdleMs: number,
    ids: readonly string[],
  ): Promise<RawEntry[]>;
  /** XCLAIM ... JUSTID: resets the idle time of entries this consumer works on (no delivery bump). */
  touch(stream: string, group: string, consumer: string, ids: readonly string[]): Promise<void>;
  /**
   * XCLAIM ... IDLE ms RETRYCOUNT n JUSTID: marks entries as idle for `idleMs`, so peers reclaim
   * them at once, and sets each one's delivery count to `deliveries[i]` (the count it had before
   * the read that never reached a handler). Without `deliveries` the counts are kept (a waiting
   * retry, whose failed attempt was a real delivery).
   */
  release(
    stream: string,
    group: string,
    consumer: string,
    ids: readonly string[],
    idleMs: number,
    deliveries?: readonly number[],
  ): Promise<void>;
  /** XADD; `maxLen` trims approximately (`MAXLEN ~`). */
  add(stream: string, fields: readonly string[], maxLen?: number): Promise<string>;
  /** Pipelined XADDs; one entry id per call, in order. */
  addMany(
    items: ReadonlyArray<{ stream: string; fields: readonly string[]; maxLen?: number }>,
  ): Promise<string[]>;
  range(stream: string, start: string, end: string, count: number): Promise<RawEntry[]>;
  remove(stream: string, ids: readonly string[]): Promise<number>;
  length(stream: string): Promise<number>;
  groups(stream: string): Promise<GroupInfo[]>;
  consumers(stream: string, group: string): Promise<ConsumerInfo[]>;
  /** CONFIG GET of one parameter; `null` when not readable (ACL, managed service). */
  config(parameter: string): Promise<string | null>;
  /** Calls `listener` each time the connection is (re)established and ready. */
  onReconnect?(listener: () => void): void;
  /** Why the connection is down, if it is; lets a caller wait for it instead of queueing. */
  readonly link?: ConnectionMonitor;
  /**
   * Takes up to `want` handler starts from the group's budget of `max` per `perMs` window, in one
   * atomic script call (`rateLimit: { scope: 'group' }`).
   */
  takeRateBudget?(
    stream: string,
    group: string,
    max: number,
    perMs: number,
    want: number,
  ): Promise<RateBudgetGrant>;
  close(): Promise<void>;
}

/** True when `redis` is an ioredis Cluster. */
export function isCluster(redis: RedisConnection): redis is Cluster {
  return (redis as Cluster).isCluster === true;
}

/** The hash slot of `key` (hash tags included), as ioredis routes it. */
export function keySlot(key: string): number {
  return new Command('xlen', [key]).getSlot();
}

/**
 * The node connection of `cluster` that serves `key`'s slot now (its master), or `undefined`
 * while the slot map is unknown. It is the very connection ioredis sends keyed commands on.
 */
function nodeOf(cluster: Cluster, key: string): Redis | undefined {
  const nodeKey = cluster.slots[keySlot(key)]?.[0];
  return nodeKey === undefined ? undefined : nodeByKey(cluster, nodeKey);
}

function nodeByKey(cluster: Cluster, nodeKey: string): Redis | undefined {
  return cluster.nodes('master').find((node) => nodeKeyOf(node) === nodeKey);
}

/** ioredis's name of a node: `host:port`. */
function nodeKeyOf(node: Redis): string {
  return `${node.options.host}:${node.options.port}`;
}

/** True for an error reply of the server (not a connection failure): it would say the same again. */
export function isReplyError(err: unknown): boolean {
  return err instanceof Error && err.name === 'ReplyError';
}

/**
 * True for a reply saying the group (or its stream) no longer exists: `NOGROUP`, or the
 * `UNBLOCKED the stream key no longer exists` that Redis 7 sends a read parked on a deleted stream.
 */
export function isNoGroupError(err: unknown): boolean {
  return (
    err instanceof Error &&
    (err.message.startsWith('NOGROUP') ||
      err.message.startsWith('UNBLOCKED the stream key no longer exists'))
  );
}

/** True for an `OOM` reply: used memory is over `maxmemory` and the command may add data. */
function isOomError(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('OOM');
}

/** True for a Redis `NOSCRIPT`-free WRONGTYPE reply: the key holds another type. */
export function isWrongTypeError(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('WRONGTYPE');
}

const DEFAULT_DEADLINE_MS = 10_000;

/**
 * The one file that speaks Redis commands and parses their replies, over one ioredis connection
 * (single node or cluster). A consumer loop owns one of these on a dedicated connection, since a
 * parked XREADGROUP holds its connection; the producer and admin share another.
 *
 * On a Cluster every command names one key, so ioredis routes it to the master of that key's slot
 * and follows MOVED / ASK (XGROUP and XINFO, which ioredis's command table lists without a key,
 * reach a random master first and are redirected). Pipelines are split per slot. Keyless commands
 * (CLIENT ID / UNBLOCK, CONFIG GET) are sent to the node they concern.
 */
export class RedisStreamsClient implements StreamsClient {
  /** Single node: CLIENT ID of `redis` (`null`: not allowed, `undefined`: not learned yet). */
  private connectionId: number | null | undefined;
  /** Cluster: CLIENT ID of each node connection of `redis` (`null`: not allowed). */
  private readonly nodeIds = new WeakMap<Redis, number | null>();
  /** Cluster: the node connection the parked read was sent on (the master of its slot). */
  private parkedNode: Redis | undefined;
  private parked = false;
  private readonly reconnectListeners = new Set<() => void>();
  /** Why the connection is down, if it is: command errors name the cause and the address. */
  readonly link: ConnectionMonitor;

  /**
   * @param redis the connection; this client owns it and closes it in `close()`.
   * @param control another connection, used to `CLIENT UNBLOCK` a parked read.
   * @param commandDeadlineMs deadline of every non-blocking command.
   */
  constructor(
    private readonly redis: RedisConnection,
    private readonly control?: RedisConnection,
    private readonly commandDeadlineMs = DEFAULT_DEADLINE_MS,
  ) {
    // The id a CLIENT UNBLOCK needs changes with every reconnect.
    redis.on('close', () => (this.connectionId = undefined));
    this.link = new ConnectionMonitor(redis);
  }

  onReconnect(listener: () => void): void {
    // one 'ready' listener however many loops share this client (no MaxListeners warning)
    if (this.reconnectListeners.size === 0)
      this.redis.on('ready', () => {
        for (const each of this.reconnectListeners) each();
      });
    this.reconnectListeners.add(listener);
  }

  /** The underlying connection, for glue that needs ioredis itself. */
  get connection(): RedisConnection {
    return this.redis;
  }

  async createGroup(stream: string, group: string, startId: string): Promise<boolean> {
    try {
      await this.call(['XGROUP', 'CREATE', stream, group, startId, 'MKSTREAM']);
      return true;
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('BUSYGROUP')) return false;
      // NOTE: at maxmemory (noeviction) Redis answers OOM before it looks for the group, so an
      // existing group gets OOM, not BUSYGROUP; reads and acks still work: go on with that group.
      if (isOomError(err) && (await this.groupExists(stream, group))) return false;
      throw err;
    }
  }

  /** True when XINFO GROUPS lists `group`; false when it does not or cannot tell. */
  private async groupExists(stream: string, group: string): Promise<boolean> {
    try {
      return (await this.groups(stream)).some((info) => info.name === group);
    } catch {
      return false;
    }
  }

  async readGroup(
    stream: string,
    group: string,
    consumer: string,
    count: number,
    id: string,
    blockMs?: number,
  ): Promise<RawEntry[]> {
    const head: Array<string | number> = ['XREADGROUP', 'GROUP', group, consumer, 'COUNT', count];
    const tail = ['STREAMS', stream, id];
    if (blockMs === undefined) return parseReadReply(await this.call([...head, ...tail]));
    return parseReadReply(await this.parkedCall(head, tail, stream, blockMs));
  }

  async readGroups(
    group: string,
    consumer: string,
    count: number,
    streams: readonly string[],
    blockMs?: number,
    uninterruptibleMs?: number,
  ): Promise<Map<string, RawEntry[]>> {
    const head: Array<string | number> = ['XREADGROUP', 'GROUP', group, consumer, 'COUNT', count];
    const tail = ['STREAMS', ...streams, ...streams.map(() => '>')];
    if (blockMs === undefined) return parseReadReplies(await this.call([...head, ...tail]));
    return parseReadReplies(
      await this.parkedCall(head, tail, streams[0], blockMs, uninterruptibleMs),
    );
  }

  /**
   * Sends `head BLOCK ms tail`, a read that parks (`stream`: one it names, for its Cluster node);
   * `interruptRead` wakes it. Where it could not (CLIENT ID refused), it parks at most
   * `uninterruptibleMs`, when given.
   */
  private async parkedCall(
    head: Array<string | number>,
    tail: string[],
    stream: string,
    blockMs: number,
    uninterruptibleMs?: number,
  ): Promise<unknown> {
    if (this.control) await this.learnConnectionId(stream);
    let block = blockMs;
    if (uninterruptibleMs !== undefined && this.unblockTarget() === undefined)
      block = Math.min(block, uninterruptibleMs);
    this.parked = true;
    try {
      // NOTE: the margin covers a slow server; past it the link is taken for half-open.
      return await this.call([...head, 'BLOCK', block, ...tail], block + Math.max(1000, block));
    } finally {
      this.parked = false;
    }
  }

  async interruptRead(mayDrop = true): Promise<void> {
    if (!this.parked) return;
    const target = this.unblockTarget();
    if (target) {
      try {
        await withDeadline(
          target.via.call('CLIENT', 'UNBLOCK', String(target.id)),
          this.commandDeadlineMs,
          'CLIENT UNBLOCK',
        );
        return;
      } catch {
        // fall through: dropping the connection also ends the read
      }
    }
    if (!mayDrop) return;
    // On a Cluster this drops every node connection (a dropped node alone would have the read
    // retried elsewhere); the read rejects and the cluster reconnects.
    this.redis.disconnect(true);
  }

  async ack(stream: string, group: string, ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    return Number(await this.call(['XACK', stream, group, ...ids]));
  }

  async autoClaim(
    stream: string,
    group: string,
    consumer: string,
    minIdleMs: number,
    cursor: string,
    count: number,
  ): Promise<AutoClaimPage> {
    const reply = (await this.call([
      'XAUTOCLAIM',
      stream,
      group,
      consumer,
      minIdleMs,
      cursor,
      'COUNT',
      count,
    ])) as [string, unknown[], string[] | undefined];
    const entries: RawEntry[] = [];
    const deletedIds = Array.isArray(reply[2]) ? reply[2].map(String) : [];
    for (const item of reply[1] ?? []) {
      // Redis 6.2 answers a deleted entry as nil (or [id, nil]) instead of the third element.
      if (item === null) continue;
      const entry = parseEntry(item);
      if (entry.fields === null) deletedIds.push(entry.entryId);
      else entries.push(entry);
    }
    return { cursor: String(reply[0]), entries, deletedIds };
  }

  async pending(stream: string, group: string, query: PendingQuery): Promise<PendingRow[]> {
    const args: Array<string | number> = ['XPENDING', stream, group];
    if (query.minIdleMs !== undefined) args.push('IDLE', query.minIdleMs);
    args.push(query.start, query.end, query.count);
    if (query.consumer !== undefined) args.push(query.consumer);
    const reply = (await this.call(args)) as Array<[string, string, number, number]>;
    return reply.map((row) => ({
      entryId: String(row[0]),
      consumer: String(row[1]),
      idleMs: Number(row[2]),
      deliveries: Number(row[3]),
    }));
  }

  async pendingCount(stream: string, group: string): Promise<number> {
    const reply = (await this.call(['XPENDING', stream, group])) as unknown[];
    return Number(reply[0]);
  }

  async claim(
    stream: string,
    group: string,
    consumer: string,
    minIdleMs: number,
    ids: readonly string[],
  ): Promise<RawEntry[]> {
    if (ids.length === 0) return [];
    const reply = (await this.call([
      'XCLAIM',
      stream,
      group,
      consumer,
      minIdleMs,
      ...ids,
    ])) as unknown[];
    const out: RawEntry[] = [];
    for (const item of reply) if (item !== null) out.push(parseEntry(item));
    return out;
  }

  async touch(
    stream: string,
    group: string,
    consumer: string,
    ids: readonly string[],
  ): Promise<void> {
    if (ids.length === 0) return;
    await this.call(['XCLAIM', stream, group, consumer, 0, ...ids, 'JUSTID']);
  }

  async release(
    stream: string,
    group: string,
    consumer: string,
    ids: readonly string[],
    idleMs: number,
    deliveries?: readonly number[],
  ): Promise<void> {
    if (deliveries === undefined) {
      // counts kept as they are (a waiting retry: its failed attempt was a real delivery)
      await this.call(['XCLAIM', stream, group, consumer, 0, ...ids, 'IDLE', idleMs, 'JUSTID']);
      return;
    }
    // RETRYCOUNT is one per XCLAIM: one call per distinct count (usually one, a fresh read's 0)
    const byCount = new Map<number, string[]>();
    ids.forEach((id, i) => {
      const count = deliveries[i];
      const same = byCount.get(count);
      if (same) same.push(id);
      else byCount.set(count, [id]);
    });
    await Promise.all(
      [...byCount].map(([count, same]) =>
        this.call([
          'XCLAIM',
          stream,
          group,
          consumer,
          0,
          ...same,
          'IDLE',
          idleMs,
          'RETRYCOUNT',
          count,
          'JUSTID',
        ]),
      ),
    );
  }

  async takeRateBudget(
    stream: string,
    group: string,
    max: number,
    perMs: number,
    want: number,
  ): Promise<RateBudgetGrant> {
    const args = [rateBudgetKey(stream, group), max, perMs, want];
    let reply: unknown;
    try {
      reply = await this.call(['EVALSHA', RATE_BUDGET_SHA, 1, ...args]);
    } catch (err) {
      if (!(err instanceof Error && err.message.startsWith('NOSCRIPT'))) throw err;
      reply = await this.call(['EVAL', RATE_BUDGET_SCRIPT, 1, ...args]);
    }
    const [granted, windowLeftMs] = reply as [number, number];
    return { granted: Number(granted), windowLeftMs: Math.max(1, Number(windowLeftMs)) };
  }

  async add(stream: string, fields: readonly string[], maxLen?: number): Promise<string> {
    return String(await this.call(addArgs(stream, fields, maxLen)));
  }

  async addMany(items: readonly WriteItem[]): Promise<string[]> {
    if (items.length === 0) return [];
    if (!isCluster(this.redis) || items.length === 1) return this.addPipelined(items);
    // A Cluster pipeline must stay within one slot: one pipeline per slot, all in flight at once.
    const { entryIds } = await perSlot(items, async (part) => ({
      entryIds: await this.addPipelined(part),
    }));
    return entryIds;
  }

  private async addPipelined(items: readonly WriteItem[]): Promise<string[]> {
    const results = await this.execWrites(items);
    return results.map((result) => this.entryId(result));
  }

  /**
   * XADDs followed by `WAIT replicas timeoutMs` as the LAST command of the same pipeline
   * (`writeThenWait`); on a Cluster one pipeline per slot, each ending with its own WAIT on the
   * master of its slot. An XADD's reply error rejects as `addMany` does; WAIT's answer (or its
   * reply error) is returned, never thrown: the entries are written by then.
   */
  async addReplicated(
    items: readonly WriteItem[],
    replicas: number,
    timeoutMs: number,
  ): Promise<ReplicatedWrite> {
    if (items.length === 0) return { entryIds: [], acknowledged: replicas };
    const pipeline: WritePipeline = {
      exec: (part, tail) => this.execWrites(part, tail),
      entryId: (result) => this.entryId(result),
      cluster: isCluster(this.redis) ? this.redis : undefined,
    };
    const send = (part: readonly WriteItem[]) => writeThenWait(pipeline, part, replicas, timeoutMs);
    if (!pipeline.cluster) return send(items);
    const { entryIds, outcomes } = await perSlot(items, send);
    return weakest(entryIds, outcomes);
  }

  /** The entry id of one XADD's [error, reply] in a pipeline; its error, explained, is thrown. */
  private entryId([err, id]: [Error | null, unknown]): string {
    if (err) throw this.link.explain(err, 'XADD');
    return String(id);
  }

  /** Sends the XADDs of `items` (and `tail`, if any) as one pipeline; one [error, reply] each. */
  private async execWrites(
    items: readonly WriteItem[],
    tail?: Array<string | number>,
  ): Promise<Array<[Error | null, unknown]>> {
    const pipeline = this.redis.pipeline();
    for (const item of items) {
      const [command, ...args] = addArgs(item.stream, item.fields, item.maxLen);
      pipeline.call(String(command), ...args);
    }
    if (tail) pipeline.call(String(tail[0]), ...tail.slice(1));
    return (
      (await pipeline.exec().catch((err: unknown) => {
        throw this.link.explain(err, 'XADD');
      })) ?? []
    );
  }

  async range(stream: string, start: string, end: string, count: number): Promise<RawEntry[]> {
    const reply = (await this.call(['XRANGE', stream, start, end, 'COUNT', count])) as unknown[];
    return reply.map(parseEntry);
  }

  async remove(stream: string, ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    return Number(await this.call(['XDEL', stream, ...ids]));
  }

  async length(stream: string): Promise<number> {
    return Number(await this.call(['XLEN', stream]));
  }

  async groups(stream: string): Promise<GroupInfo[]> {
    let reply: unknown[];
    try {
      reply = (await this.call(['XINFO', 'GROUPS', stream])) as unknown[];
    } catch (err) {
      if (err instanceof Error && /no such key/i.test(err.message)) return [];
      throw err;
    }
    return reply.map((item) => {
      const map = mapReply(item);
      const lag = map.get('lag');
      return {
        name: String(map.get('name')),
        pending: Number(map.get('pending') ?? 0),
        // Redis 7 reports lag (nil when it cannot tell); 6.2 has no such field.
        lag: lag === undefined || lag === null ? null : Number(lag),
        lastDeliveredId: String(map.get('last-delivered-id') ?? '0-0'),
      };
    });
  }

  async consumers(stream: string, group: string): Promise<ConsumerInfo[]> {
    const reply = (await this.call(['XINFO', 'CONSUMERS', stream, group])) as unknown[];
    return reply.map((item) => {
      const map = mapReply(item);
      return {
        name: String(map.get('name')),
        pending: Number(map.get('pending') ?? 0),
        idleMs: Number(map.get('idle') ?? 0),
      };
    });
  }

  /** On a Cluster every master is asked; values that differ are listed, comma-separated. */
  async config(parameter: string): Promise<string | null> {
    try {
      const replies = [await this.call(['CONFIG', 'GET', parameter])];
      if (isCluster(this.redis)) {
        // the first call waited for the slot map; it went to a random node: ask every master
        const masters = this.redis.nodes('master');
        replies.push(
          ...(await Promise.all(
            masters.map((node) =>
              withDeadline(
                node.call('CONFIG', 'GET', parameter),
                this.commandDeadlineMs,
                'CONFIG GET',
              ),
            ),
          )),
        );
      }
      // one parameter asked: the one value of the (flat or object) map, if any
      const values = new Set(
        replies.flatMap((reply) => [...mapReply(reply).values()].slice(0, 1).map(String)),
      );
      return values.size === 0 ? null : [...values].join(',');
    } catch {
      return null;
    }
  }

  async close(): Promise<void> {
    if (this.redis.status === 'end') return;
    try {
      await withDeadline(this.redis.quit(), 1000, 'QUIT');
    } catch {
      // a dead link cannot say goodbye
    }
    this.redis.disconnect();
  }

  /**
   * Learns the CLIENT ID a CLIENT UNBLOCK of the coming read on `stream` needs: the id of `redis`,
   * or on a Cluster the id of the node connection serving the stream's slot (learned once per node
   * connection). One round trip per new connection, none per read.
   */
  private async learnConnectionId(stream: string): Promise<void> {
    if (!isCluster(this.redis)) {
      if (this.connectionId !== undefined) return;
      try {
        this.connectionId = Number(await this.call(['CLIENT', 'ID']));
      } catch (err) {
        // not allowed (ACL): interrupts drop the link; a link failure: learn it on the next read
        if (isReplyError(err)) this.connectionId = null;
      }
      return;
    }
    const node = nodeOf(this.redis, stream);
    this.parkedNode = node;
    if (!node || this.nodeIds.has(node)) return;
    try {
      const id = Number(
        await withDeadline(node.call('CLIENT', 'ID'), this.commandDeadlineMs, 'CLIENT ID'),
      );
      this.nodeIds.set(node, id);
      // the id changes if this node connection reconnects (a clusterNodeRetryStrategy)
      node.once('close', () => this.nodeIds.delete(node));
    } catch (err) {
      if (isReplyError(err)) this.nodeIds.set(node, null);
    }
  }

  /** Where to send CLIENT UNBLOCK for the parked read: another connection to its server. */
  private unblockTarget(): { via: RedisConnection; id: number } | undefined {
    const control = this.control;
    if (!control) return undefined;
    if (!isCluster(this.redis)) {
      return typeof this.connectionId === 'number'
        ? { via: control, id: this.connectionId }
        : undefined;
    }
    const node = this.parkedNode;
    const id = node && this.nodeIds.get(node);
    if (!node || typeof id !== 'number') return undefined;
    // CLIENT ids are per server: the UNBLOCK must reach the same node, over the control cluster.
    const via = isCluster(control) ? nodeByKey(control, nodeKeyOf(node)) : undefined;
    return via ? { via, id } : undefined;
  }

  /** Sends one command; a reply later than the deadline drops the link (it may be half-open). */
  private call(
    args: Array<string | number>,
    deadlineMs = this.commandDeadlineMs,
  ): Promise<unknown> {
    const [command, ...rest] = args;
    const pending = this.redis.call(String(command), ...rest).catch((err: unknown) => {
      throw this.link.explain(err, String(command));
    });
    return withDeadline(pending, deadlineMs, String(command), () => {
      this.link.noteFailure({
        reason: 'timeout',
        detail: `${String(command)} got no reply within ${deadlineMs} ms`,
      });
      this.redis.disconnect(true);
    });
  }
}

/** Rejects with {@link RedisDeadlineError} (after `onExpire`) when `promise` takes longer than `ms`. */
export function withDeadline<T>(
  promise: Promise<T>,
  ms: number,
  command: string,
  onExpire?: () => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      onExpire?.();
      reject(new RedisDeadlineError(command, ms));
    }, ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
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
