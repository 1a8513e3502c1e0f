/**
 * A real Redis Cluster for e2e tests: N masters (3 by default, no replicas unless
 * `replicasPerMaster`) on loopback, each a
 * {@link RedisServer} started with `--cluster-enabled yes`, a `nodes.conf` in its own dir and an
 * AOF fsynced on every write, so a master SIGKILLed and restarted comes back with its identity,
 * its slots and its data.
 *
 * Slots are split evenly with CLUSTER ADDSLOTSRANGE (0-5460, 5461-10922, 10923-16383 for 3), the
 * nodes meet with CLUSTER MEET, and `start()` resolves once every node reports `cluster_state:ok`
 * and the same full slot map. With `replicasPerMaster: 1` every master gets a replica (CLUSTER
 * REPLICATE, as `redis-cli --cluster create --cluster-replicas 1` does): SIGKILL a master and its
 * replica is promoted after about `nodeTimeoutMs` + 1 s (see `waitFailover()`); restart the old
 * master and it rejoins as a replica of the new one.
 *
 *   const cluster = await RedisCluster.start();
 *   EchoStreamModule.forRoot({ cluster: { nodes: cluster.nodes } });
 *   ...
 *   afterAll(async () => { await app.close(); await cluster.stop(); });
 *
 * ESM-safe: no `__dirname`, no `require`.
 */
import { Cluster, Redis, type ClusterOptions } from 'ioredis';
import { RedisServer } from './redis-server';
import { waitFor } from './wait-for';

const SLOTS = 16384;

/** Options for {@link RedisCluster.start}. */
export interface RedisClusterOptions {
  /** How many masters. @default 3 */
  masters?: number;
  /** `--cluster-node-timeout` (ms): how long before a silent node is marked failing. @default 2000 */
  nodeTimeoutMs?: number;
  /** How long `start()` and `waitHealthy()` wait for `cluster_state:ok`. @default 15000 */
  readyTimeoutMs?: number;
  /** More `redis-server` arguments for every node (appended last). */
  extraArgs?: string[];
  /** Replicas of each master (CLUSTER REPLICATE). @default 0 */
  replicasPerMaster?: number;
}

/** One slot range as CLUSTER SLOTS reports it, with the port of its master. */
interface SlotRange {
  from: number;
  to: number;
  port: number;
  /** Replicas CLUSTER SLOTS lists for the range. */
  replicas: number;
}

/** A Redis Cluster of real `redis-server` processes on 127.0.0.1. */
export class RedisCluster {
  private readonly clients = new Set<Redis | Cluster>();
  private stopped = false;

  private constructor(
    /**
     * Every node: first the masters as started, in slot order (`servers[0]` owns slot 0), then
     * their replicas (`servers[masters + i]` replicates `servers[i % masters]` at start). Roles
     * change with a failover: `masterFor()` and `roleOf()` ask the cluster.
     */
    readonly servers: readonly RedisServer[],
    private readonly readyTimeoutMs: number,
    /** How many of `servers` started as masters. */
    private readonly masterCount: number,
  ) {}

  /** Starts the nodes, assigns the slots, joins them and waits for `cluster_state:ok` everywhere. */
  static async start(opts: RedisClusterOptions = {}): Promise<RedisCluster> {
    const masters = opts.masters ?? 3;
    if (!Number.isInteger(masters) || masters < 1) throw new Error('masters must be >= 1');
    const perMaster = opts.replicasPerMaster ?? 0;
    if (!Number.isInteger(perMaster) || perMaster < 0) {
      throw new Error('replicasPerMaster must be >= 0');
    }
    const readyTimeoutMs = opts.readyTimeoutMs ?? 15_000;
    const extraArgs = [
      '--cluster-enabled',
      'yes',
      // Relative to `--dir`: every node keeps its identity in <server.dir>/nodes.conf, which a
      // restart (same dir) reloads.
      '--cluster-config-file',
      'nodes.conf',
      '--cluster-node-timeout',
      String(opts.nodeTimeoutMs ?? 2000),
      // Redis 7 lists a replica in CLUSTER SLOTS only once its replication offset is not 0: on an
      // empty master that is the first replication PING, every 10 s by default, which made
      // forming a cluster take 14-16 s against the 15 s bound (it failed once in CI)
      '--repl-ping-replica-period',
      '1',
      // a replica's first sync starts at once (the default waits 5 s for more replicas)
      '--repl-diskless-sync-delay',
      '0',
      ...(opts.extraArgs ?? []),
    ];
    const started = await Promise.allSettled(
      Array.from({ length: masters * (1 + perMaster) }, () =>
        RedisServer.start({ appendonly: true, appendfsync: 'always', extraArgs }),
      ),
    );
    const servers = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const failed = started.find((r) => r.status === 'rejected');
    if (failed) {
      await Promise.all(servers.map((s) => s.stop()));
      throw (failed as PromiseRejectedResult).reason;
    }
    const cluster = new RedisCluster(servers, readyTimeoutMs, masters);
    try {
      await cluster.form();
      return cluster;
    } catch (err) {
      await cluster.stop();
      throw err;
    }
  }

  /** Startup nodes for ioredis `Cluster` / `EchoStreamModule.forRoot({ cluster: { nodes } })`. */
  get nodes(): Array<{ host: string; port: number }> {
    return this.servers.map((s) => ({ host: s.host, port: s.port }));
  }

  /**
   * A new ioredis Cluster client on this cluster (no-op `error` listener), disconnected by
   * `stop()`.
   */
  client(options: ClusterOptions = {}): Cluster {
    const c = new Cluster(this.nodes, options);
    c.on('error', () => undefined);
    c.on('node error', () => undefined);
    this.clients.add(c);
    c.once('end', () => this.clients.delete(c));
    return c;
  }

  /** The hash slot of `key` (CLUSTER KEYSLOT on a running node, so hash tags count). */
  async keySlot(key: string): Promise<number> {
    return Number(await this.ask(['CLUSTER', 'KEYSLOT', key]));
  }

  /** The master that owns `key`'s slot now (CLUSTER KEYSLOT + CLUSTER SLOTS). */
  async masterFor(key: string): Promise<RedisServer> {
    const slot = await this.keySlot(key);
    const range = (await this.slotRanges()).find((r) => r.from <= slot && slot <= r.to);
    const server = range && this.servers.find((s) => s.port === range.port);
    if (!server) throw new Error(`no master of this cluster owns slot ${slot} (key '${key}')`);
    return server;
  }

  /**
   * Moves `key`'s slot (and every key in it) to master `to`, the way `redis-cli --cluster
   * reshard` does: SETSLOT IMPORTING / MIGRATING, MIGRATE the keys in batches, SETSLOT NODE on
   * every master. Clients meet ASK while keys move and MOVED after.
   */
  async moveSlotOf(key: string, to: RedisServer): Promise<void> {
    const slot = await this.keySlot(key);
    const from = await this.masterFor(key);
    if (from === to) return;
    const fromId = String(await this.on(from, ['CLUSTER', 'MYID']));
    const toId = String(await this.on(to, ['CLUSTER', 'MYID']));
    await this.on(to, ['CLUSTER', 'SETSLOT', slot, 'IMPORTING', fromId]);
    await this.on(from, ['CLUSTER', 'SETSLOT', slot, 'MIGRATING', toId]);
    for (;;) {
      const keys = (await this.on(from, ['CLUSTER', 'GETKEYSINSLOT', slot, 100])) as string[];
      if (keys.length === 0) break;
      await this.on(from, ['MIGRATE', to.host, to.port, '', 0, 5000, 'KEYS', ...keys]);
    }
    for (const server of [to, from, ...this.servers.filter((s) => s !== to && s !== from)]) {
      if (server.isRunning()) await this.on(server, ['CLUSTER', 'SETSLOT', slot, 'NODE', toId]);
    }
  }

  /** `'master'` or `'replica'`, as `server` itself says now (INFO replication). */
  async roleOf(server: RedisServer): Promise<'master' | 'replica'> {
    const info = String(await this.on(server, ['INFO', 'replication']));
    return /^role:master\r?$/m.test(info) ? 'master' : 'replica';
  }

  /**
   * After `master` was killed: waits until another node serves every slot `master` owned
   * (its replica was promoted) and every running node reports `cluster_state:ok`; returns the
   * new master. Give `slots` (from `slotsOf()` before the kill) when `master` is already down.
   */
  async waitFailover(
    master: RedisServer,
    slots: readonly number[],
    timeoutMs = this.readyTimeoutMs,
  ): Promise<RedisServer> {
    const promoted = await waitFor(
      async () => {
        const owners = new Set<RedisServer>();
        const ranges = await this.slotRanges();
        for (const slot of slots) {
          const range = ranges.find((r) => r.from <= slot && slot <= r.to);
          const owner = range && this.servers.find((s) => s.port === range.port);
          if (!owner || owner === master || !owner.isRunning()) return undefined;
          owners.add(owner);
        }
        for (const server of this.servers) {
          if (server.isRunning() && (await this.stateOf(server)) !== 'ok') return undefined;
        }
        return owners.size === 1 ? [...owners][0] : undefined;
      },
      { timeoutMs, intervalMs: 50, message: `a replica of port ${master.port} promoted` },
    );
    return promoted!;
  }

  /** The slots `master` serves now (CLUSTER SLOTS), e.g. to give `waitFailover()`. */
  async slotsOf(master: RedisServer): Promise<number[]> {
    const slots: number[] = [];
    for (const range of await this.slotRanges()) {
      if (range.port !== master.port) continue;
      for (let slot = range.from; slot <= range.to; slot++) slots.push(slot);
    }
    return slots;
  }

  /**
   * Waits until every master has `replicasPerMaster` replicas online (initial sync done; after
   * `start()`, or once a killed master restarted and rejoined as a replica).
   */
  async waitReplicated(timeoutMs = this.readyTimeoutMs): Promise<void> {
    const perMaster = (this.servers.length - this.masterCount) / this.masterCount;
    await waitFor(
      async () => {
        for (const server of this.servers) {
          if (!server.isRunning() || (await this.roleOf(server)) !== 'master') continue;
          const info = String(await this.on(server, ['INFO', 'replication']));
          // online: the initial sync is done and the replica streams the master's writes
          const online = [...info.matchAll(/^slave\d+:.*state=online/gm)];
          if (online.length < perMaster) {
            throw new Error(`port ${server.port}: ${online.length} replica(s) online\n${info}`);
          }
        }
        return true;
      },
      { timeoutMs, intervalMs: 50, message: `${perMaster} replica(s) online per master` },
    );
  }

  /** `cluster_state` as `server` sees it: `'ok'` or `'fail'` (slots uncovered, majority lost). */
  async stateOf(server: RedisServer): Promise<string> {
    const info = String(await this.on(server, ['CLUSTER', 'INFO']));
    return /^cluster_state:(\w+)/m.exec(info)?.[1] ?? 'unknown';
  }

  /**
   * Waits until every running node reports `cluster_state:ok` and the whole slot map, e.g. after
   * `servers[i].restart()`.
   */
  async waitHealthy(timeoutMs = this.readyTimeoutMs): Promise<void> {
    await waitFor(
      async () => {
        for (const server of this.servers) {
          if (!server.isRunning()) continue;
          const info = String(await this.on(server, ['CLUSTER', 'INFO']));
          if (!/^cluster_state:ok\r?$/m.test(info)) return false;
          if (!/^cluster_slots_ok:16384\r?$/m.test(info)) return false;
          if (!/^cluster_known_nodes:(\d+)\r?$/m.test(info)) return false;
          const known = Number(/^cluster_known_nodes:(\d+)/m.exec(info)![1]);
          if (known !== this.servers.length) return false;
        }
        return true;
      },
      {
        timeoutMs,
        intervalMs: 50,
        message: `cluster_state:ok on all ${this.servers.length} nodes`,
      },
    );
  }

  /** Disconnects the clients made by `client()`, stops every node (SIGTERM) and removes its dir. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const c of this.clients) c.disconnect();
    this.clients.clear();
    await Promise.all(this.servers.map((s) => s.stop()));
  }

  /** ADDSLOTSRANGE, SET-CONFIG-EPOCH and MEET, then REPLICATE, then waits for agreement. */
  private async form(): Promise<void> {
    const count = this.masterCount;
    const per = Math.floor(SLOTS / count);
    const masters = this.servers.slice(0, count);
    const replicas = this.servers.slice(count);
    await Promise.all(
      replicas.map((server, i) => this.on(server, ['CLUSTER', 'SET-CONFIG-EPOCH', count + i + 1])),
    );
    await Promise.all(
      masters.map(async (server, i) => {
        const from = i * per + Math.min(i, SLOTS % count);
        const to = from + per - 1 + (i < SLOTS % count ? 1 : 0);
        try {
          await this.on(server, ['CLUSTER', 'ADDSLOTSRANGE', from, to]);
        } catch (err) {
          // Redis < 7 has no ADDSLOTSRANGE: name every slot
          if (!/unknown subcommand|syntax/i.test(String(err))) throw err;
          const slots = Array.from({ length: to - from + 1 }, (_, k) => from + k);
          await this.on(server, ['CLUSTER', 'ADDSLOTS', ...slots]);
        }
        // Distinct epochs up front, as `redis-cli --cluster create` does: no collision to resolve.
        await this.on(server, ['CLUSTER', 'SET-CONFIG-EPOCH', i + 1]);
      }),
    );
    const [first, ...others] = this.servers;
    for (const other of others) await this.on(first, ['CLUSTER', 'MEET', other.host, other.port]);
    if (replicas.length > 0) {
      const ids = await Promise.all(
        masters.map(async (m) => String(await this.on(m, ['CLUSTER', 'MYID']))),
      );
      // REPLICATE needs the master known to the replica: retried until gossip got it there
      await Promise.all(
        replicas.map((server, i) =>
          waitFor(() => this.on(server, ['CLUSTER', 'REPLICATE', ids[i % count]]), {
            timeoutMs: this.readyTimeoutMs,
            intervalMs: 50,
            message: `CLUSTER REPLICATE on port ${server.port}`,
          }),
        ),
      );
    }
    await this.waitHealthy();
    if (replicas.length > 0) await this.waitReplicated();
    // Each node answered ok; make sure each also maps every slot to the right master (ioredis
    // takes its slot map from whichever startup node answers first).
    await waitFor(
      async () => {
        for (const server of this.servers) {
          const ranges = await this.slotRanges(server);
          const covered = ranges.reduce((n, r) => n + (r.to - r.from + 1), 0);
          if (covered !== SLOTS || ranges.length !== count) return false;
          // and every replica listed with its master (ioredis learns replicas from CLUSTER SLOTS)
          const listed = ranges.reduce((n, r) => n + r.replicas, 0);
          if (listed !== this.servers.length - count) return false;
        }
        return true;
      },
      // a node hears a replica's offset from its own pings, sparse under a long node timeout:
      // 5-6 s here with cluster-node-timeout 30 s, later under load (a generous bound)
      {
        timeoutMs: Math.max(this.readyTimeoutMs, 45_000),
        message: 'the same slot map on every node',
      },
    );
  }

  private async slotRanges(server?: RedisServer): Promise<SlotRange[]> {
    const reply = (await (server
      ? this.on(server, ['CLUSTER', 'SLOTS'])
      : this.ask(['CLUSTER', 'SLOTS']))) as Array<
      [number, number, [string, number, ...unknown[]], ...unknown[]]
    >;
    return reply.map(([from, to, master, ...replicas]) => ({
      from: Number(from),
      to: Number(to),
      port: Number(master[1]),
      replicas: replicas.length,
    }));
  }

  /** One command on the first running node that answers. */
  private async ask(args: Array<string | number>): Promise<unknown> {
    let last: unknown = new Error('no node of the cluster is running');
    for (const server of this.servers) {
      if (!server.isRunning()) continue;
      try {
        return await this.on(server, args);
      } catch (err) {
        last = err;
      }
    }
    throw last;
  }

  /** One command on one node over a short-lived plain connection (no cluster redirections). */
  private async on(server: RedisServer, args: Array<string | number>): Promise<unknown> {
    const conn = new Redis({
      host: server.host,
      port: server.port,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      enableOfflineQueue: false,
      connectTimeout: 1000,
    });
    conn.on('error', () => undefined);
    try {
      await conn.connect();
      const [command, ...rest] = args;
      return await conn.call(String(command), ...rest);
    } finally {
      conn.disconnect();
    }
  }
}
