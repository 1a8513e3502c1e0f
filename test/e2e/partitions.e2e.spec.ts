/**
 * Partitioned streams (docs/partitions.md) through the Nest module on a real redis-server: keyed
 * publish routes by crc32(key) mod P and records the key; the count is stored and a different one
 * fails (publish and bootstrap); two apps of one group share the partitions evenly through
 * leases, each key's entries run one at a time in stream order, a failing entry holds back only
 * its key; a graceful stop hands its partitions over.
 */
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { Redis } from 'ioredis';
import {
  ConsumerStats,
  crc32,
  EchoStreamDashboardModule,
  EchoStreamConfigError,
  StreamHandler,
  StreamProducer,
  type StreamMessage,
} from '../../lib';
import { DashboardService } from '../../lib/dashboard/dashboard.service';
import { CaptureLogger, createEchoStreamApp } from '../faults/support/nest-app';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { runCliProcess } from '../support/cli-process';
import { waitFor } from '../support/wait-for';

let server: RedisServer;
let redis: Redis;
const apps: INestApplication[] = [];

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});
afterAll(async () => {
  redis.disconnect();
  await stopAllRedisServers();
});

/** One handler call, as the handler saw it. */
interface Call {
  app: string;
  key: string | undefined;
  seq: number;
  partition: number | undefined;
  generation: number | undefined;
  attempts: number;
  startedAt: number;
  endedAt?: number;
}

/** An app of `consumerName` whose handler on `stream` records its calls in `calls`. */
async function startApp(
  name: string,
  stream: string,
  options: Record<string, unknown>,
  calls: Call[],
  behave: (m: StreamMessage<{ seq: number }>) => Promise<void> = () => sleep(5),
): Promise<{ app: INestApplication; logger: CaptureLogger }> {
  @Injectable()
  class Handler {
    @StreamHandler(stream, 'g', options)
    async handle(m: StreamMessage<{ seq: number }>): Promise<void> {
      const call: Call = {
        app: name,
        key: m.key,
        seq: m.payload.seq,
        partition: m.partition,
        generation: m.leaseGeneration,
        attempts: m.attempts,
        startedAt: Date.now(),
      };
      calls.push(call);
      await behave(m);
      call.endedAt = Date.now();
    }
  }
  @Module({ imports: [EchoStreamDashboardModule.register()], providers: [Handler] })
  class HandlerModule {}
  const logger = new CaptureLogger();
  const app = await createEchoStreamApp(
    { connection: server.url, consumerName: name, shutdownTimeoutMs: 3000 },
    HandlerModule,
    logger,
  );
  apps.push(app);
  await app.init();
  return { app, logger };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
let n = 0;
const fresh = () => `parts-${process.pid}-${++n}`;

/** Per key: every seq completed once, in order, none started before the previous one ended. */
function expectKeyOrder(calls: readonly Call[], perKey: Map<string, number>): void {
  const byKey = new Map<string, Call[]>();
  for (const call of calls) {
    if (call.endedAt === undefined) continue;
    byKey.set(call.key ?? '?', [...(byKey.get(call.key ?? '?') ?? []), call]);
  }
  for (const [key, count] of perKey) {
    const done = (byKey.get(key) ?? []).sort((a, b) => a.startedAt - b.startedAt);
    expect(done.map((c) => c.seq)).toEqual(Array.from({ length: count }, (_, i) => i));
  }
  const started = new Map<string, Call[]>();
  for (const call of calls)
    started.set(call.key ?? '?', [...(started.get(call.key ?? '?') ?? []), call]);
  for (const list of started.values()) {
    list.sort((a, b) => a.startedAt - b.startedAt);
    for (let i = 1; i < list.length; i++)
      expect(list[i].startedAt).toBeGreaterThanOrEqual(list[i - 1].endedAt ?? Infinity);
  }
}

describe('keyed publish', () => {
  it('routes to <stream>:p:<crc32(key) mod P>, records the key, and keeps the count fixed', async () => {
    const stream = fresh();
    @Module({})
    class Empty {}
    const app = await createEchoStreamApp({ connection: server.url }, Empty, new CaptureLogger());
    apps.push(app);
    await app.init();
    const producer = app.get(StreamProducer);
    await expect(producer.publish(stream, { a: 1 }, { key: 'acct-1' })).rejects.toThrow(
      /no stored partition count/,
    );
    const receipt = await producer.publish(stream, { a: 1 }, { key: 'acct-42', partitions: 8 });
    // zlib.crc32(b'acct-42') == 1198172233 (Python), 1198172233 % 8 == 1
    expect(crc32('acct-42')).toBe(1198172233);
    const entries = await redis.xrange(`${stream}:p:1`, '-', '+');
    expect(entries).toEqual([
      [receipt.entryId, ['id', receipt.id, 'data', '{"a":1}', 'pkey', 'acct-42']],
    ]);
    // the stored count is used without the option; another count fails and writes nothing
    await producer.publishMany(stream, [{ a: 2 }, { a: 3 }], { key: 'acct-42' });
    expect(await redis.xlen(`${stream}:p:1`)).toBe(3);
    await expect(
      producer.publish(stream, { a: 4 }, { key: 'acct-42', partitions: 4 }),
    ).rejects.toThrow(`stream '${stream}' is stored with 8 partition(s), this call says 4`);
    expect(await redis.xlen(`${stream}:p:1`)).toBe(3);
  });

  it('stores producer.partitions at bootstrap and fails bootstrap on a different stored count', async () => {
    const stream = fresh();
    @Module({})
    class Empty {}
    const first = await createEchoStreamApp(
      { connection: server.url, producer: { partitions: { [stream]: 3 } } },
      Empty,
      new CaptureLogger(),
    );
    apps.push(first);
    await first.init();
    expect(await redis.get(`{${stream}}:echo-partitions`)).toBe('3');
    // the configured count routes a publish that says none
    const receipt = await first.get(StreamProducer).publish(stream, { a: 1 }, { key: 'acct-42' });
    expect(await redis.xrange(`${stream}:p:${1198172233 % 3}`, '-', '+')).toEqual([
      [receipt.entryId, ['id', receipt.id, 'data', '{"a":1}', 'pkey', 'acct-42']],
    ]);
    const second = await createEchoStreamApp(
      { connection: server.url, producer: { partitions: { [stream]: 5 } } },
      Empty,
      new CaptureLogger(),
    );
    apps.push(second);
    await expect(second.init()).rejects.toThrow(
      `stream '${stream}' is stored with 3 partition(s), configured with 5 (producer.partitions)`,
    );
  });
});

describe('partitioned handlers', () => {
  it('fail at bootstrap when the stored count differs, naming stream and both counts', async () => {
    const stream = fresh();
    await startApp('a', stream, { partitions: 4 }, []);
    await expect(startApp('b', stream, { partitions: 6 }, [])).rejects.toThrow(
      EchoStreamConfigError,
    );
    await expect(startApp('c', stream, { partitions: 6 }, [])).rejects.toThrow(
      `stream '${stream}' is stored with 4 partition(s), configured with 6`,
    );
  });

  it('share the partitions evenly, keep per-key order, and hand over on a graceful stop', async () => {
    const stream = fresh();
    const calls: Call[] = [];
    const options = { partitions: 6, partitionLeaseMs: 1000, concurrency: 4 };
    const a = await startApp('a', stream, options, calls);
    const b = await startApp('b', stream, options, calls);
    const statsOf = (app: INestApplication) => app.get(ConsumerStats).snapshot()[0];
    await waitFor(
      () => statsOf(a.app).partitions?.length === 3 && statsOf(b.app).partitions?.length === 3,
      { timeoutMs: 10_000, message: 'three partitions each' },
    );
    const owned = [...statsOf(a.app).partitions!, ...statsOf(b.app).partitions!]
      .map((p) => p.partition)
      .sort();
    expect(owned).toEqual([0, 1, 2, 3, 4, 5]);
    const producer = a.app.get(StreamProducer);
    const perKey = new Map<string, number>();
    for (let round = 0; round < 10; round++)
      for (let k = 0; k < 12; k++) {
        const key = `k${k}`;
        const seq = perKey.get(key) ?? 0;
        perKey.set(key, seq + 1);
        await producer.publish(stream, { seq }, { key });
      }
    await waitFor(() => calls.filter((c) => c.endedAt).length === 120, {
      timeoutMs: 20_000,
      message: 'all 120 handled',
    });
    expectKeyOrder(calls, perKey);
    for (const call of calls) {
      expect(call.partition).toBe(crc32(call.key!) % 6);
      expect(call.generation).toBeGreaterThanOrEqual(1);
    }
    // Nest's loggers are process-wide: the last app's logger gets every app's lines
    const rebalances = b.logger.matching(/partitions owned \[.*\] -> \[/);
    expect(rebalances.some((l) => /-> \[0,1,2\] \(2 member\(s\)\)/.test(l))).toBe(true);

    // visible: the lag of each owned partition in the snapshot and Prometheus, the owners in
    // `echo-stream inspect`
    await waitFor(() => statsOf(a.app).partitions?.every((p) => p.lag === 0), {
      timeoutMs: 5000,
      message: 'lag 0 read for every owned partition',
    });
    const metrics = await a.app.get(ConsumerStats).prometheus();
    for (const p of statsOf(a.app).partitions!)
      expect(metrics).toContain(
        `echo_stream_partition_lag{stream="${stream}",group="g",consumer="a",handler="Handler.handle",partition="${p.partition}"} 0`,
      );
    const inspected = await runCliProcess(['--url', server.url, '--json', 'inspect', stream]);
    expect(inspected.stderr).toBe('');
    const view = JSON.parse(inspected.stdout) as {
      partitions: number;
      length: number;
      groups: Array<{
        group: string;
        partitions: Array<{ owner: string; generation: number; pending: number }>;
      }>;
    };
    expect(view).toMatchObject({ partitions: 6, length: 120 });
    expect(view.groups.map((g) => g.group)).toEqual(['g']);
    expect(view.groups[0].partitions.map((p) => p.owner)).toEqual(['a', 'a', 'a', 'b', 'b', 'b']);
    const text = await runCliProcess(['--url', server.url, 'inspect', stream]);
    expect(text.stdout).toMatch(/partitioned, 6 partition\(s\), 120 entries, 1 group\(s\)/);
    expect(text.stdout).toMatch(/PARTITION +OWNER +GENERATION +LEASE LEFT +LENGTH +PENDING +LAG/);

    // the dashboard's group row: owners and partitions, pending and lag summed
    const overview = await a.app.get(DashboardService).overview();
    const row = overview.streams.find((v) => v.stream === stream);
    expect(row).toMatchObject({ length: 120, groups: [{ group: 'g', state: 'running', lag: 0 }] });
    expect(row!.groups[0].consumers.map((c) => c.name).sort()).toEqual(['a', 'b']);
    expect(row!.groups[0].partitions!.map((p) => p.owner)).toEqual(['a', 'a', 'a', 'b', 'b', 'b']);

    // a graceful stop: b's partitions move to a within about a second
    const stoppedAt = Date.now();
    await b.app.close();
    apps.splice(apps.indexOf(b.app), 1);
    await waitFor(() => statsOf(a.app).partitions?.length === 6, {
      timeoutMs: 5000,
      message: 'a owns all six',
    });
    const handOffMs = Date.now() - stoppedAt;
    expect(handOffMs).toBeLessThan(5000);
    process.stdout.write(
      `partitions e2e: graceful hand-off of 3 partitions took ${handOffMs} ms\n`,
    );
    const before = calls.length;
    for (let k = 0; k < 12; k++) {
      const key = `k${k}`;
      const seq = perKey.get(key)!;
      perKey.set(key, seq + 1);
      await producer.publish(stream, { seq }, { key });
    }
    await waitFor(() => calls.filter((c) => c.endedAt).length === before + 12, {
      timeoutMs: 10_000,
      message: 'the next 12 handled by a',
    });
    expectKeyOrder(calls, perKey);
    expect(calls.slice(before).every((c) => c.app === 'a')).toBe(true);
  });

  it('hold back only the key of a failing entry, retried in place, then go on in order', async () => {
    const stream = fresh();
    const calls: Call[] = [];
    let failures = 0;
    await startApp(
      'a',
      stream,
      {
        partitions: 1,
        concurrency: 4,
        retry: { type: 'fixed', delayMs: 300 },
        maxDeliveries: 5,
      },
      calls,
      async (m) => {
        await sleep(5);
        if (m.key === 'bad' && m.payload.seq === 0 && m.attempts < 3) {
          failures++;
          throw new Error(`planned failure ${m.attempts}`);
        }
      },
    );
    const producer = (apps[0] as INestApplication).get(StreamProducer);
    for (let seq = 0; seq < 3; seq++) {
      await producer.publish(stream, { seq }, { key: 'bad' });
      await producer.publish(stream, { seq }, { key: 'good' });
    }
    await waitFor(() => calls.filter((c) => c.endedAt).length === 6, {
      timeoutMs: 10_000,
      message: 'all handled',
    });
    expect(failures).toBe(2);
    const bad = calls.filter((c) => c.key === 'bad');
    expect(bad.map((c) => [c.seq, c.attempts])).toEqual([
      [0, 1],
      [0, 2],
      [0, 3],
      [1, 1],
      [2, 1],
    ]);
    // the retries waited their delay; the good key did not wait for them
    expect(bad[1].startedAt - bad[0].startedAt).toBeGreaterThanOrEqual(300);
    const good = calls.filter((c) => c.key === 'good');
    expect(good.map((c) => c.seq)).toEqual([0, 1, 2]);
    expect(good[2].endedAt!).toBeLessThan(bad[1].startedAt);
  });

  it('let other keys read later and run while a failing key waits for its retry', async () => {
    const stream = fresh();
    const calls: Call[] = [];
    await startApp(
      'a',
      stream,
      {
        partitions: 1,
        concurrency: 4,
        retry: { type: 'fixed', delayMs: 500 },
        maxDeliveries: 5,
        claimIntervalMs: 500,
      },
      calls,
      async (m) => {
        await sleep(5);
        if (m.key === 'A' && m.payload.seq === 0 && m.attempts < 3)
          throw new Error(`planned failure ${m.attempts}`);
      },
    );
    const producer = (apps[0] as INestApplication).get(StreamProducer);
    const stats = () => (apps[0] as INestApplication).get(ConsumerStats).snapshot()[0];
    await producer.publish(stream, { seq: 0 }, { key: 'A' });
    await producer.publish(stream, { seq: 1 }, { key: 'A' });
    await waitFor(() => calls.some((c) => c.key === 'A'), { message: 'A0 started' });
    await sleep(50); // A0 failed, A1 parked behind it
    // the held retry is in the stats like any other
    await waitFor(() => stats().retrying === 1, { message: "A0's retry counted as waiting" });
    expect(stats().totalRetries).toBe(1);
    // B's entries are published after A0 failed: a later read of the same partition
    for (let seq = 0; seq < 5; seq++) await producer.publish(stream, { seq }, { key: 'B' });
    await producer.publish(stream, { seq: 2 }, { key: 'A' });
    // a failed attempt never ends: 5 of B, A0's third attempt, A1, A2
    await waitFor(() => calls.filter((c) => c.endedAt).length === 8, {
      timeoutMs: 10_000,
      message: 'all handled',
    });
    const a = calls.filter((c) => c.key === 'A');
    expect(a.map((c) => [c.seq, c.attempts])).toEqual([
      [0, 1],
      [0, 2],
      [0, 3],
      [1, 1],
      [2, 1],
    ]);
    expect(a[1].startedAt - a[0].startedAt).toBeGreaterThanOrEqual(500);
    expect(a[2].startedAt - a[1].startedAt).toBeGreaterThanOrEqual(500);
    const b = calls.filter((c) => c.key === 'B');
    expect(b.map((c) => c.seq)).toEqual([0, 1, 2, 3, 4]);
    // the other key did not wait for the failing key's retry
    expect(b[4].endedAt!).toBeLessThan(a[1].startedAt);
    expect(stats()).toMatchObject({ retrying: 0, totalRetries: 2 });
    // every entry acked (the held key's lane acks its entries when its run settles)
    await waitFor(async () => ((await redis.xpending(`${stream}:p:0`, 'g')) as [number])[0] === 0, {
      timeoutMs: 2000,
      message: 'nothing pending',
    });
  });

  it('hand a waiting retry and the entries behind it to the next owner, in order', async () => {
    const stream = fresh();
    const calls: Call[] = [];
    const options = {
      partitions: 1,
      partitionLeaseMs: 1000,
      retry: { type: 'fixed', delayMs: 60_000 },
      maxDeliveries: 5,
    };
    const first = await startApp('a', stream, options, calls, async (m) => {
      await sleep(5);
      if (m.key === 'A' && m.payload.seq === 0) throw new Error('planned failure');
    });
    const producer = first.app.get(StreamProducer);
    await producer.publish(stream, { seq: 0 }, { key: 'A' });
    await waitFor(() => calls.some((c) => c.key === 'A' && c.attempts === 1), {
      message: 'A0 failed',
    });
    await producer.publish(stream, { seq: 1 }, { key: 'A' });
    await producer.publish(stream, { seq: 0 }, { key: 'B' });
    await waitFor(() => calls.some((c) => c.key === 'B' && c.endedAt !== undefined), {
      message: 'B0 handled while A waits',
    });
    await sleep(300); // A1 read and parked behind A0
    expect(calls.filter((c) => c.key === 'A').map((c) => c.seq)).toEqual([0]);
    // a graceful stop: the waiting retry and A1 stay pending for the next owner
    await first.app.close();
    apps.splice(apps.indexOf(first.app), 1);
    const [pending] = (await redis.xpending(`${stream}:p:0`, 'g')) as [number];
    expect(pending).toBe(2);
    await startApp('b', stream, options, calls, () => sleep(5));
    await waitFor(() => calls.filter((c) => c.app === 'b').length === 2, {
      timeoutMs: 10_000,
      message: 'the next owner ran A0 and A1',
    });
    await waitFor(() => calls.every((c) => c.app === 'a' || c.endedAt !== undefined), {
      message: 'ended',
    });
    expect(calls.filter((c) => c.app === 'b').map((c) => [c.key, c.seq])).toEqual([
      ['A', 0],
      ['A', 1],
    ]);
    expect(calls.filter((c) => c.key === 'A' && c.app === 'a').length).toBe(1);
  }, 30_000);
});
