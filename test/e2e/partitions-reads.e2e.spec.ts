/**
 * Reads that do not grow with partitions (docs/partitions.md "Connections" and "Idle cost"), on a
 * real redis-server through the Nest module. Each test states the invariant it checks:
 * - connections: an app of one group with four handlers of 16 partitions and one plain handler
 *   holds no more connections than the same app with five plain handlers, plus one; with
 *   `sharedReads: false`, two per partitioned handler;
 * - idle: a parked process's commands per second (INFO commandstats, the commands scripts run
 *   included) do not grow with its partitions;
 * - sweeps: an entry left pending by another consumer in an owned partition is still reclaimed
 *   (not before `minIdleMs`), a poison one dead-lettered, through the pending probe.
 * Partition loops leaving the shared read: test/e2e/partitions-reads-handover.e2e.spec.ts.
 */
import type { Redis } from 'ioredis';
import { ConsumerStats, partitionOf, partitionStreamOf, StreamProducer } from '../../lib';
import { createConnection } from '../../lib/redis/connection/redis-connection.factory';
import { RedisStreamsClient } from '../../lib/redis/streams-client';
import { PartitionApps, type HandlerSpec } from '../support/partition-apps';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

let server: RedisServer;
let redis: Redis;
const apps = new PartitionApps(() => server.url);

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterEach(() => apps.closeAll());
afterAll(async () => {
  redis.disconnect();
  await stopAllRedisServers();
});

let n = 0;
const fresh = (tag: string) => `reads-${tag}-${process.pid}-${++n}`;

/** CLIENT LIST connections named `echo-stream-*`, by name. */
async function echoConnections(): Promise<{ total: number; byName: Record<string, number> }> {
  const byName: Record<string, number> = {};
  let total = 0;
  for (const line of String(await redis.client('LIST')).split('\n')) {
    const name = / name=(\S*)/.exec(line)?.[1] ?? '';
    if (!name.startsWith('echo-stream-')) continue;
    byName[name] = (byName[name] ?? 0) + 1;
    total++;
  }
  return { total, byName };
}

/** Connections of the apps still open once the closed ones are gone from CLIENT LIST. */
async function noEchoConnections(): Promise<void> {
  await waitFor(async () => (await echoConnections()).total === 0, {
    timeoutMs: 5000,
    message: 'the closed apps left CLIENT LIST',
  });
}

/** Calls per command Redis ran since CONFIG RESETSTAT (the test's own INFO and RESETSTAT left out). */
async function commandCalls(on: Redis = redis): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const line of (await on.info('commandstats')).split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (m && m[1] !== 'info' && m[1] !== 'config|resetstat') out[m[1]] = Number(m[2]);
  }
  return out;
}

/** Four handlers of `partitions` partitions and one plain handler, one group. */
function fourAndOne(tag: string, partitions: number | null): HandlerSpec[] {
  const base = fresh(tag);
  return [
    ...[0, 1, 2, 3].map((i) => ({ stream: `${base}-${i}`, options: { partitions } })),
    { stream: `${base}-plain`, options: {} },
  ];
}

describe('connections do not grow with partitions', () => {
  it('4 handlers x 16 partitions + 1 plain: no more connections than 5 plain handlers, plus one', async () => {
    // Invariant (docs/partitions.md "Connections"): the partition loops read through the group's
    // shared read and send through the loops' commands connection; nothing per partition
    const plain = await apps.start('plain-app', fourAndOne('plain', null));
    const plainCount = await echoConnections();
    await apps.close(plain);
    await noEchoConnections();

    const specs = fourAndOne('part', 16);
    const app = await apps.start('part-app', specs, {}, (_, owned) => owned === 16);
    const partCount = await echoConnections();
    console.log(
      `connections: 5 plain handlers ${JSON.stringify(plainCount.byName)}; 4 x 16 partitions + 1 plain ${JSON.stringify(partCount.byName)}`,
    );
    expect(partCount.total).toBeLessThanOrEqual(plainCount.total + 1);
    // and the partitions are read: one entry per partition of one handler, all handled
    const stats = app.get(ConsumerStats);
    const stream = specs[0].stream;
    const producer = app.get(StreamProducer);
    for (let i = 0; i < 64; i++) await producer.publish(stream, { seq: i }, { key: `k${i}` });
    await waitFor(() => stats.get(stream, 'g')!.totalAcked === 64, {
      timeoutMs: 10_000,
      message: '64 entries acked over 16 partitions',
    });
    expect((await echoConnections()).total).toBe(partCount.total);
  });

  it('sharedReads: false: one commands connection and one read per partitioned handler, not per partition', async () => {
    const app = await apps.start(
      'solo-app',
      fourAndOne('solo', 16),
      { sharedReads: false },
      (_, owned) => owned === 16,
    );
    // the app's shared one, the plain loop's own, and 2 per partitioned handler (16 partitions)
    const expected = {
      'echo-stream-shared': 1,
      'echo-stream-loop': 1 + 4,
      'echo-stream-read': 4,
    };
    // a handler's read connection names itself once connected, a moment after its loops start
    // (CI once listed 3 of the 4 reads right after the 16th partition was owned)
    let count = await echoConnections();
    const settleBy = Date.now() + 5_000;
    const sameAs = (byName: Record<string, number>): boolean =>
      JSON.stringify(Object.entries(byName).sort()) ===
      JSON.stringify(Object.entries(expected).sort());
    while (!sameAs(count.byName) && Date.now() < settleBy) {
      await sleep(50);
      count = await echoConnections();
    }
    console.log(`connections, sharedReads: false: ${JSON.stringify(count.byName)}`);
    expect(count.byName).toEqual(expected);
    await apps.close(app);
    await noEchoConnections();
  });
});

describe('idle cost does not grow with partitions', () => {
  it('a parked process of 4 x 16 partitions sends no more commands per second than one of 4 x 1 (x1.25)', async () => {
    // Invariant (docs/partitions.md "Idle cost"): lease renewals are a fixed number of commands
    // per handler and tick, the partition loops share one read and one pending probe per handler.
    // A count over a window, not a speed: both apps run the same timers, side by side, each on a
    // server of its own so that each server's INFO commandstats counts one app.
    const windowS = 8;
    const measure = async (partitions: number): Promise<number> => {
      const own = await RedisServer.start();
      const client = own.client();
      const ownApps = new PartitionApps(() => own.url);
      try {
        await ownApps.start(
          `idle-${partitions}`,
          fourAndOne(`idle${partitions}`, partitions),
          {},
          (_, owned) => owned === partitions,
        );
        await sleep(1500); // past the start-up (groups, own-PEL drains, first reads)
        await client.config('RESETSTAT');
        const t0 = Date.now();
        await sleep(windowS * 1000);
        const calls = await commandCalls(client);
        const seconds = (Date.now() - t0) / 1000;
        const perSecond = Object.values(calls).reduce((a, b) => a + b, 0) / seconds;
        console.log(
          `idle, 4 x ${partitions} partitions + 1 plain: ${perSecond.toFixed(1)} commands/s ${JSON.stringify(calls)}`,
        );
        return perSecond;
      } finally {
        await ownApps.closeAll();
        client.disconnect();
        await own.stop();
      }
    };
    const [one, sixteen] = await Promise.all([measure(1), measure(16)]);
    expect(sixteen).toBeLessThanOrEqual(one * 1.25);
  }, 60_000);
});

describe('sweeps through the pending probe', () => {
  it('an entry a frozen old owner read is reclaimed after minIdleMs (not before); a poison one is dead-lettered', async () => {
    // Invariant: the pending probe finds what a partition loop's own sweep found: an entry
    // pending under another consumer in an owned partition is reclaimed once idle past minIdleMs,
    // one delivered maxDeliveries times goes to the dead letters
    const stream = fresh('probe');
    const handled: Array<{ key: string; attempts: number; at: number }> = [];
    const minIdleMs = 1500;
    const app = await apps.start(
      'owner',
      [
        {
          stream,
          options: { partitions: 2, minIdleMs, claimIntervalMs: 200, maxDeliveries: 3 },
          handle: (m) => void handled.push({ key: m.key!, attempts: m.attempts, at: Date.now() }),
        },
      ],
      {},
      (_, owned) => owned === 2,
    );
    const producer = app.get(StreamProducer);
    const stale = partitionStreamOf(stream, partitionOf('stale', 2));
    const poison = partitionStreamOf(stream, partitionOf('poison', 2));
    // both partition loops running: each claimed its last owner's pending entries (with min idle
    // 0) before it started, so the old owner's entries below are read after every take-over
    const warm = [0, 1].map((p) => {
      let i = 0;
      while (partitionOf(`warm-${i}`, 2) !== p) i++;
      return `warm-${i}`;
    });
    for (const key of warm) await producer.publish(stream, { seq: 0 }, { key });
    await waitFor(() => warm.every((key) => handled.some((h) => h.key === key)), {
      message: 'a warm-up entry handled in each partition',
    });
    // the frozen old owner reads an entry after the take-over (XADD + XREADGROUP in one
    // MULTI, so the owner's parked read cannot take it first)
    const readByOld = async (key: string, target: string, deliveries: number): Promise<string> => {
      const id = `${Date.now()}-${key}`;
      const reply = (await redis
        .multi()
        .xadd(target, '*', 'id', id, 'data', '{"seq":0}', 'pkey', key)
        .xreadgroup('GROUP', 'g', 'old', 'COUNT', 1, 'STREAMS', target, '>')
        .exec()) as Array<[Error | null, unknown]>;
      const entryId = String(reply[0][1]);
      // more deliveries to the old owner (a poison pill has been delivered many times)
      for (let i = 1; i < deliveries; i++) await redis.xclaim(target, 'g', 'old', 0, entryId);
      return entryId;
    };
    const readAt = Date.now();
    await readByOld('stale', stale, 1);
    await readByOld('poison', poison, 3);
    await producer.publish(stream, { seq: 1 }, { key: 'fresh' });
    await waitFor(() => handled.some((h) => h.key === 'fresh'), { message: 'a fresh entry runs' });
    await waitFor(() => handled.some((h) => h.key === 'stale'), {
      timeoutMs: minIdleMs + 10_000,
      message: 'the stale entry reclaimed and handled',
    });
    const reclaimed = handled.find((h) => h.key === 'stale')!;
    expect(reclaimed.at - readAt).toBeGreaterThanOrEqual(minIdleMs);
    await waitFor(async () => (await redis.xlen(`${stream}:dlq`)) === 1, {
      timeoutMs: 10_000,
      message: 'the poison entry dead-lettered',
    });
    for (const s of [stale, poison])
      await waitFor(async () => Number(((await redis.xpending(s, 'g')) as [number])[0]) === 0, {
        timeoutMs: 5000,
        message: `nothing pending on ${s}`,
      });
    // checked once its partition's sweep has run (its own cycle): dead-lettered, never handled
    expect(handled.some((h) => h.key === 'poison')).toBe(false);
  }, 30_000);

  it('the probe script answers each PEL size and whether one entry is idle, per stream', async () => {
    const client = new RedisStreamsClient(
      createConnection({ connection: server.url, cluster: undefined }, 'loop', () => undefined),
    );
    try {
      const base = fresh('script');
      const [busy, empty, none] = [0, 1, 2].map((i) => `${base}:p:${i}`);
      for (const s of [busy, empty]) await redis.xgroup('CREATE', s, 'g', '$', 'MKSTREAM');
      for (let i = 0; i < 3; i++) await redis.xadd(busy, '*', 'id', `e${i}`, 'data', '{}');
      await redis.xreadgroup('GROUP', 'g', 'x', 'COUNT', 3, 'STREAMS', busy, '>');
      expect(await client.pendingProbes.probe('g', [busy, empty, none], 60_000)).toEqual([
        { pending: 3, idle: false },
        { pending: 0, idle: false },
        { pending: null, idle: false },
      ]);
      await sleep(60);
      expect(await client.pendingProbes.probe('g', [busy, empty], 50)).toEqual([
        { pending: 3, idle: true },
        { pending: 0, idle: false },
      ]);
    } finally {
      await client.close();
    }
  });
});
