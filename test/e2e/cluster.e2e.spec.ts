/**
 * The module on a real Redis Cluster (3 masters, no replicas, AOF fsynced on every write): README "Options"
 * `cluster` option with every guarantee of docs/delivery.md and docs/dead-letters.md. Each test uses fresh stream names and checks
 * what the cluster holds afterwards (XPENDING on the owning master, dead-letter streams), not only
 * what handlers saw. The master restart test goes last: it leaves the cluster healthy but slow to
 * settle.
 */
import 'reflect-metadata';
import { Injectable, type INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Cluster } from 'ioredis';
import {
  ConsumerStats,
  DeadLetter,
  EchoStreamAdmin,
  EchoStreamModule,
  StreamHandler,
  StreamProducer,
  type DeadLetterMessage,
  type EchoStreamModuleOptions,
  type StreamMessage,
} from '../../lib';
import { EchoStreamConnections } from '../../lib/runtime/echo-stream.connections';
import { RedisCluster } from '../support/redis-cluster';
import type { RedisServer } from '../support/redis-server';
import { stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

let cluster: RedisCluster;
let redis: Cluster;
let n = 0;
const apps: INestApplicationContext[] = [];

beforeAll(async () => {
  cluster = await RedisCluster.start();
  redis = cluster.client();
});
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});
afterAll(async () => {
  await cluster?.stop();
  await stopAllRedisServers();
});

/** A fresh key owned by `master` (different names until one lands there). */
async function keyOn(master: RedisServer, prefix: string): Promise<string> {
  for (let i = 0; i < 1000; i++) {
    const key = `${prefix}-${process.pid}-${++n}`;
    if ((await cluster.masterFor(key)) === master) return key;
  }
  throw new Error(`no key found on master ${master.port}`);
}

async function boot(
  providers: unknown[],
  extra: EchoStreamModuleOptions = {},
): Promise<INestApplicationContext> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      EchoStreamModule.forRoot({
        cluster: { nodes: cluster.nodes },
        consumerName: 'c1',
        shutdownTimeoutMs: 2000,
        ...extra,
      }),
    ],
    providers: providers as never[],
  }).compile();
  const app = moduleRef.createNestApplication();
  apps.push(app);
  await app.init();
  return app;
}

async function close(app: INestApplicationContext): Promise<void> {
  const at = apps.indexOf(app);
  if (at >= 0) apps.splice(at, 1);
  await app.close();
}

async function pending(stream: string, group: string): Promise<number> {
  const summary = (await redis.xpending(stream, group)) as [number, ...unknown[]];
  return Number(summary[0]);
}

async function pendingRows(stream: string, group: string) {
  const rows = (await redis.xpending(stream, group, '-', '+', 1000)) as Array<
    [string, string, number, number]
  >;
  return rows.map(([entryId, consumer, idleMs, deliveries]) => ({
    entryId,
    consumer,
    idleMs,
    deliveries,
  }));
}

/** CLIENT UNBLOCK calls served, summed over the masters (INFO commandstats). */
async function unblockCalls(): Promise<number> {
  let calls = 0;
  for (const server of cluster.servers) {
    const direct = server.client();
    const info = await direct.info('commandstats');
    direct.disconnect();
    calls += Number(/^cmdstat_client\|unblock:calls=(\d+)/m.exec(info)?.[1] ?? 0);
  }
  return calls;
}

function fieldMap(flat: string[]): Record<string, string> {
  const map: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) map[flat[i]] = flat[i + 1];
  return map;
}

describe('EchoStreamModule on a Redis Cluster', () => {
  it('runs handlers on streams owned by each of the three masters, acks, and closes fast', async () => {
    const [m0, m1, m2] = cluster.servers;
    const streams = [
      await keyOn(m0, 'spread'),
      await keyOn(m1, 'spread'),
      await keyOn(m2, 'spread'),
    ];
    const owners = await Promise.all(streams.map((s) => cluster.masterFor(s)));
    expect(new Set(owners).size).toBe(3);
    const seen = new Map<string, string[]>(streams.map((s) => [s, []]));
    const record = (m: StreamMessage<{ n: number }>) => void seen.get(m.stream)!.push(m.id);

    // blockMs stays at its 5000 default: close() proves the parked reads are woken on a cluster
    @Injectable()
    class Spread {
      @StreamHandler(streams[0], 'g')
      a(m: StreamMessage<{ n: number }>): void {
        record(m);
      }
      @StreamHandler(streams[1], 'g')
      b(m: StreamMessage<{ n: number }>): void {
        record(m);
      }
      @StreamHandler(streams[2], 'g')
      c(m: StreamMessage<{ n: number }>): void {
        record(m);
      }
    }
    const app = await boot([Spread]);
    const stats = app.get(ConsumerStats);
    await waitFor(() => stats.snapshot().every((s) => s.state === 'running'), {
      message: 'three loops running',
    });
    const producer = app.get(StreamProducer);
    const expected = new Map<string, string[]>(streams.map((s) => [s, []]));
    for (let i = 0; i < 5; i++) {
      for (const stream of streams) {
        expected.get(stream)!.push((await producer.publish(stream, { n: i })).id);
      }
    }
    // publishMany: one stream, one slot, one pipeline
    const many = await producer.publishMany(streams[1], [{ n: 10 }, { n: 11 }]);
    expected.get(streams[1])!.push(...many.map((r) => r.id));
    // a pipeline over streams of three masters: split per slot, results in call order
    const client = app.get(EchoStreamConnections).client;
    const items = streams.map((stream, i) => ({
      stream,
      fields: ['id', `mixed-${i}`, 'data', JSON.stringify({ n: 100 + i })],
    }));
    const entryIds = await client.addMany([...items, ...items.slice().reverse()]);
    expect(entryIds).toHaveLength(6);
    for (const [i, stream] of streams.entries()) {
      const [first] = await redis.xrange(stream, entryIds[i], entryIds[i]);
      expect(fieldMap(first[1]).id).toBe(`mixed-${i}`);
      expected.get(stream)!.push(`mixed-${i}`, `mixed-${i}`);
    }

    for (const stream of streams) {
      await waitFor(() => seen.get(stream)!.length === expected.get(stream)!.length, {
        message: `every entry of ${stream} handled`,
      });
      expect(seen.get(stream)).toEqual(expected.get(stream));
      await waitFor(async () => (await pending(stream, 'g')) === 0, {
        message: `${stream} acked`,
      });
      expect(await redis.xlen(stream)).toBe(expected.get(stream)!.length);
    }
    const inspected = await stats.inspect(streams[2], 'g');
    expect(inspected).toMatchObject({ pending: 0, lag: 0, deadLetters: 0 });
    expect(inspected.consumers.map((c) => c.name)).toEqual(['c1']);
    expect(
      stats
        .snapshot()
        .map((s) => s.totalAcked)
        .sort(),
    ).toEqual([7, 7, 9]);

    const unblocksBefore = await unblockCalls();
    const started = Date.now();
    await close(app);
    expect(Date.now() - started).toBeLessThan(2000);
    // woken by CLIENT UNBLOCK sent to the master each read was parked on (not by a dropped link)
    expect((await unblockCalls()) - unblocksBefore).toBeGreaterThanOrEqual(3);
  });

  it('shares a read between streams of one hash slot; a stream of another slot keeps its own', async () => {
    // Invariant (docs/scale.md): one XREADGROUP may only name keys of one slot, so the loops of a group
    // share a blocking read per slot: while parked, the master of the tagged slot holds ONE
    // blocked echo-stream-read client for both tagged streams, the other master one for its
    // stream; entries of all three are handled and acked.
    const [m0, m1] = cluster.servers;
    const tagged: string[] = [];
    for (let i = 0; tagged.length === 0 && i < 1000; i++) {
      const tag = `{slot-${process.pid}-${i}}`;
      if ((await cluster.masterFor(tag)) === m0) tagged.push(`${tag}:a`, `${tag}:b`);
    }
    const other = await keyOn(m1, 'own-slot');
    const seen: string[] = [];
    @Injectable()
    class SlotShare {
      @StreamHandler(tagged[0], 'g')
      a(m: StreamMessage): void {
        seen.push(`${m.stream}:${m.id}`);
      }
      @StreamHandler(tagged[1], 'g')
      b(m: StreamMessage): void {
        seen.push(`${m.stream}:${m.id}`);
      }
      @StreamHandler(other, 'g')
      c(m: StreamMessage): void {
        seen.push(`${m.stream}:${m.id}`);
      }
    }
    const app = await boot([SlotShare]);
    const stats = app.get(ConsumerStats);
    await waitFor(() => stats.snapshot().every((s) => s.state === 'running'));
    const blockedReads = async (master: RedisServer): Promise<number> => {
      const direct = master.client();
      const list = String(await direct.client('LIST'));
      direct.disconnect();
      return list
        .split('\n')
        .filter((line) => /name=echo-stream-read /.test(line) && /flags=\S*b/.test(line)).length;
    };
    await waitFor(async () => (await blockedReads(m0)) === 1 && (await blockedReads(m1)) === 1, {
      message: 'one parked shared read per slot',
    });
    const producer = app.get(StreamProducer);
    const expected: string[] = [];
    for (const stream of [...tagged, other]) {
      expected.push(`${stream}:${(await producer.publish(stream, { n: 1 })).id}`);
    }
    await waitFor(() => seen.length === 3, { message: 'all three handled' });
    expect(seen.sort()).toEqual(expected.sort());
    for (const stream of [...tagged, other]) {
      await waitFor(async () => (await pending(stream, 'g')) === 0, { message: `${stream} acked` });
    }
    expect(await blockedReads(m0)).toBeLessThanOrEqual(1);
  });

  it("reclaims a stopped consumer's entries in another process", async () => {
    const stream = await keyOn(cluster.servers[1], 'reclaim');
    let firstCalls = 0;
    @Injectable()
    class Stuck {
      // takes the entries and never finishes: its process goes away with them pending
      @StreamHandler(stream, 'workers', { blockMs: 200, minIdleMs: 30_000 })
      hang(): Promise<void> {
        firstCalls++;
        return new Promise<void>(() => undefined);
      }
    }
    const seen: Array<{ id: string; attempts: number }> = [];
    @Injectable()
    class Rescuer {
      @StreamHandler(stream, 'workers', { blockMs: 200, minIdleMs: 800, claimIntervalMs: 100 })
      take(m: StreamMessage<unknown>): void {
        seen.push({ id: m.id, attempts: m.attempts });
      }
    }
    // published before the first app starts, so that its first read takes all four
    const ids = ['r-0', 'r-1', 'r-2', 'r-3'];
    for (const id of ids) await redis.xadd(stream, '*', 'id', id, 'data', '{}');
    const first = await boot([Stuck], { consumerName: 'first', shutdownTimeoutMs: 200 });
    await waitFor(() => firstCalls === 1, { message: 'first consumer holds the first entry' });
    await waitFor(async () => (await pending(stream, 'workers')) === 4);
    await close(first);
    const held = await pendingRows(stream, 'workers');
    expect(held.map((r) => r.consumer)).toEqual(['first', 'first', 'first', 'first']);

    await boot([Rescuer], { consumerName: 'second' });
    await waitFor(() => seen.length === 4, { timeoutMs: 10_000, message: 'all four reclaimed' });
    expect(seen.map((s) => s.id).sort()).toEqual([...ids].sort());
    // the first process held all four: the one in its hung handler came back after minIdleMs as a
    // second delivery; the three queued behind it were released uncharged (their read reached no
    // handler), so they came back at once as first deliveries
    expect(Object.fromEntries(seen.map((s) => [s.id, s.attempts]))).toEqual({
      'r-0': 2,
      'r-1': 1,
      'r-2': 1,
      'r-3': 1,
    });
    expect(firstCalls).toBe(1);
    await waitFor(async () => (await pending(stream, 'workers')) === 0, { message: 'acked' });
  });

  it('dead-letters poison pills and undecodable entries, also to a dead-letter stream on another master', async () => {
    // `<stream>:dlq` hashes on its own: find a stream whose dead letters live on another master
    let stream = '';
    for (;;) {
      stream = await keyOn(cluster.servers[0], 'poison');
      if ((await cluster.masterFor(`${stream}:dlq`)) !== cluster.servers[0]) break;
    }
    // with a hash tag the stream and its dead letters share a slot, hence a master
    const tagged = `{tagged-${process.pid}-${++n}}`;
    expect(await cluster.keySlot(`${tagged}:dlq`)).toBe(await cluster.keySlot(tagged));

    const letters: DeadLetterMessage[] = [];
    const good: string[] = [];
    const opts = { blockMs: 200, minIdleMs: 300, claimIntervalMs: 100, maxDeliveries: 2 };
    @Injectable()
    class Poisoned {
      @StreamHandler(stream, 'g', opts)
      onUntagged(m: StreamMessage<{ poison?: boolean }>): void {
        if (m.payload.poison) throw new Error(`cannot digest ${m.id}`);
        good.push(m.id);
      }
      @StreamHandler(tagged, 'g', opts)
      onTagged(m: StreamMessage<{ poison?: boolean }>): void {
        if (m.payload.poison) throw new Error(`cannot digest ${m.id}`);
        good.push(m.id);
      }
      @DeadLetter()
      dead(letter: DeadLetterMessage): void {
        letters.push(letter);
      }
    }
    const app = await boot([Poisoned]);
    const producer = app.get(StreamProducer);
    await producer.publish(stream, { poison: true }, { id: 'pill-1' });
    await producer.publish(stream, {}, { id: 'fine-1' });
    await redis.xadd(stream, '*', 'id', 'garbled-1', 'data', '{not json');
    await producer.publish(tagged, { poison: true }, { id: 'pill-2' });
    await producer.publish(tagged, {}, { id: 'fine-2' });

    await waitFor(() => letters.length === 3, { timeoutMs: 10_000, message: 'three dead letters' });
    expect(good.sort()).toEqual(['fine-1', 'fine-2']);
    expect(letters.map((l) => `${l.id}:${l.reason}`).sort()).toEqual([
      'garbled-1:decode_error',
      'pill-1:max_deliveries',
      'pill-2:max_deliveries',
    ]);
    expect(letters.find((l) => l.id === 'pill-1')).toMatchObject({
      stream,
      group: 'g',
      attempts: 2,
      error: expect.stringContaining('cannot digest pill-1'),
    });
    for (const s of [stream, tagged]) {
      await waitFor(async () => (await pending(s, 'g')) === 0, { message: `${s} settled` });
    }
    const copies = (await redis.xrange(`${stream}:dlq`, '-', '+')).map(([, flat]) =>
      fieldMap(flat),
    );
    expect(copies.map((c) => `${c.id}:${c.dlq_reason}:${c.dlq_stream}`).sort()).toEqual([
      `garbled-1:decode_error:${stream}`,
      `pill-1:max_deliveries:${stream}`,
    ]);
    const taggedCopies = await redis.xrange(`${tagged}:dlq`, '-', '+');
    expect(taggedCopies.map(([, flat]) => fieldMap(flat).id)).toEqual(['pill-2']);
    expect((await app.get(ConsumerStats).inspect(stream, 'g')).deadLetters).toBe(2);

    // redrive across masters: XADD on the stream's master, XDEL on the dead-letter stream's
    expect(await app.get(EchoStreamAdmin).redrive(stream, { count: 1 })).toBe(1);
    await waitFor(() => letters.length === 4, {
      timeoutMs: 10_000,
      message: 'redriven pill dies again',
    });
    expect(await redis.xlen(`${stream}:dlq`)).toBe(2);
  });

  it('re-creates a group destroyed on its master (NOGROUP) and keeps consuming', async () => {
    const master = cluster.servers[2];
    const stream = await keyOn(master, 'nogroup');
    const seen: string[] = [];
    @Injectable()
    class Survivor {
      @StreamHandler(stream, 'g', { blockMs: 200 })
      take(m: StreamMessage<unknown>): void {
        seen.push(m.id);
      }
    }
    const app = await boot([Survivor]);
    const producer = app.get(StreamProducer);
    await producer.publish(stream, {}, { id: 'a' });
    await waitFor(() => seen.includes('a'));

    const direct = master.client(); // a plain connection to the owning master: no redirection
    expect(await direct.xgroup('DESTROY', stream, 'g')).toBe(1);
    await producer.publish(stream, {}, { id: 'b' });
    await waitFor(() => seen.includes('b'), { message: 'b handled after XGROUP DESTROY' });

    await direct.del(stream);
    await waitFor(async () => (await direct.exists(stream)) === 1, { message: 'MKSTREAM again' });
    await producer.publish(stream, {}, { id: 'c' });
    await waitFor(() => seen.includes('c'), { message: 'c handled after DEL' });
    // the group re-created at startId '0' hands 'a' out again: at-least-once, ids dedup
    expect([...new Set(seen)]).toEqual(['a', 'b', 'c']);
    expect(await pending(stream, 'g')).toBe(0);
    expect(app.get(ConsumerStats).get(stream, 'g')?.state).toBe('running');
    direct.disconnect();
  });

  it('follows a stream whose slot migrates to another master (ASK / MOVED)', async () => {
    const [m0, m1] = cluster.servers;
    const stream = await keyOn(m0, 'moving');
    const seen: string[] = [];
    @Injectable()
    class Follower {
      @StreamHandler(stream, 'g', { blockMs: 200 })
      take(m: StreamMessage<unknown>): void {
        seen.push(m.id);
      }
    }
    const app = await boot([Follower]);
    const producer = app.get(StreamProducer);
    await producer.publish(stream, {}, { id: 'before' });
    await waitFor(() => seen.includes('before'));

    await cluster.moveSlotOf(stream, m1);
    expect(await cluster.masterFor(stream)).toBe(m1);
    await producer.publish(stream, {}, { id: 'after' });
    await waitFor(() => seen.includes('after'), { message: 'read follows the slot to m1' });
    expect(seen).toEqual(['before', 'after']);
    // the key, its group and its PEL now live on m1 (a plain connection: no redirection)
    const direct = m1.client();
    expect(await direct.xlen(stream)).toBe(2);
    await waitFor(async () => Number(((await direct.xpending(stream, 'g')) as unknown[])[0]) === 0);
    direct.disconnect();
    // counted when the XACK's reply is back: the server may show the PEL empty a moment before
    await waitFor(() => app.get(ConsumerStats).get(stream, 'g')?.totalAcked === 2, {
      message: 'both acks counted',
    });
    expect(app.get(ConsumerStats).get(stream, 'g')?.totalAcked).toBe(2);
  });

  it('rides out a master SIGKILLed and restarted mid-run: degraded, recovered, nothing lost', async () => {
    const [m0, m1, m2] = cluster.servers;
    const streams = [await keyOn(m0, 'crash'), await keyOn(m1, 'crash'), await keyOn(m2, 'crash')];
    const victim = m1;
    const handled = new Map<string, Set<string>>(streams.map((s) => [s, new Set()]));
    @Injectable()
    class Steady {
      @StreamHandler(streams[0], 'g', { blockMs: 200 })
      a(m: StreamMessage<unknown>): void {
        handled.get(m.stream)!.add(m.id);
      }
      @StreamHandler(streams[1], 'g', { blockMs: 200 })
      b(m: StreamMessage<unknown>): void {
        handled.get(m.stream)!.add(m.id);
      }
      @StreamHandler(streams[2], 'g', { blockMs: 200 })
      c(m: StreamMessage<unknown>): void {
        handled.get(m.stream)!.add(m.id);
      }
    }
    const app = await boot([Steady]);
    const producer = app.get(StreamProducer);
    const stats = app.get(ConsumerStats);

    // A producer that retries a failed publish with the same id: every id it saw acknowledged
    // must be handled; one that failed may have been written, or not.
    const acknowledged = new Map<string, Set<string>>(streams.map((s) => [s, new Set()]));
    let publishing = true;
    let failures = 0;
    const publisher = (async () => {
      for (let i = 0; publishing; i++) {
        for (const stream of streams) {
          const id = `${stream}-${i}`;
          for (;;) {
            try {
              await producer.publish(stream, { i }, { id });
              acknowledged.get(stream)!.add(id);
              break;
            } catch {
              failures++;
              await sleep(100);
            }
          }
        }
        await sleep(20);
      }
    })();

    await waitFor(() => [...handled.values()].every((s) => s.size >= 3), {
      message: 'steady state before the crash',
    });
    const writtenBeforeKill = acknowledged.get(streams[1])!.size;
    await victim.kill('SIGKILL');
    // the survivors mark it failing after the node timeout; its slots uncovered, they answer
    // CLUSTERDOWN to every key (cluster-require-full-coverage): every loop degrades
    await waitFor(
      async () =>
        (await Promise.all([m0, m2].map((m) => cluster.stateOf(m)))).every((s) => s === 'fail'),
      { timeoutMs: 10_000, message: 'cluster_state:fail on the survivors' },
    );
    await waitFor(() => stats.snapshot().every((s) => s.state === 'degraded'), {
      timeoutMs: 10_000,
      message: 'every loop degraded',
    });
    await victim.restart();
    await cluster.waitHealthy(20_000);
    // the restarted master reloaded its AOF (fsync always): nothing it acknowledged is gone
    expect(await redis.xlen(streams[1])).toBeGreaterThanOrEqual(writtenBeforeKill);
    await waitFor(() => stats.snapshot().every((s) => s.state === 'running'), {
      timeoutMs: 20_000,
      message: 'every loop running again',
    });
    const total = () => [...acknowledged.values()].reduce((sum, s) => sum + s.size, 0);
    const after = total();
    await waitFor(() => total() >= after + 6, { timeoutMs: 10_000, message: 'publishing again' });
    publishing = false;
    await publisher;

    expect(failures).toBeGreaterThan(0);
    for (const stream of streams) {
      const want = acknowledged.get(stream)!;
      await waitFor(() => [...want].every((id) => handled.get(stream)!.has(id)), {
        timeoutMs: 15_000,
        message: `every acknowledged entry of ${stream} handled`,
      });
      await waitFor(async () => (await pending(stream, 'g')) === 0, {
        timeoutMs: 10_000,
        message: `nothing pending on ${stream}`,
      });
    }
    expect(stats.get(streams[1], 'g')!.lastError).toBeTruthy();
  });
});
