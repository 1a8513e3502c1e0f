/**
 * Pausing a partitioned group (docs/partitions.md "Pause") on a real redis-server through the
 * Nest module: `echo-stream pause <stream> <group>` on the partitioned stream's name holds every
 * partition loop of the group in every process (state 'paused'), the entry in hand finishes and is
 * acked, nothing new is read, a process that joins while paused takes its partitions and stays
 * paused, and the dashboard's resume brings every partition back with nothing lost.
 */
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { Redis } from 'ioredis';
import {
  ConsumerStats,
  EchoStreamAdmin,
  EchoStreamDashboardModule,
  StreamHandler,
  StreamProducer,
  partitionStreamOf,
  type StreamMessage,
} from '../../lib';
import { DashboardService } from '../../lib/dashboard/dashboard.service';
import { CaptureLogger, createEchoStreamApp } from '../faults/support/nest-app';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { runCliProcess } from '../support/cli-process';
import { sleep, waitFor } from '../support/wait-for';

const PARTITIONS = 4;
const CLAIM_INTERVAL_MS = 200;

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
  startedAt: number;
  endedAt?: number;
}

/** An app of `consumerName` whose partitioned handler on `stream` records its calls. */
async function startApp(
  name: string,
  stream: string,
  calls: Call[],
  behave: (m: StreamMessage<{ seq: number }>) => Promise<void>,
): Promise<INestApplication> {
  @Injectable()
  class Handler {
    @StreamHandler(stream, 'g', {
      partitions: PARTITIONS,
      partitionLeaseMs: 1000,
      concurrency: 4,
      claimIntervalMs: CLAIM_INTERVAL_MS,
    })
    async handle(m: StreamMessage<{ seq: number }>): Promise<void> {
      const call: Call = { app: name, key: m.key, seq: m.payload.seq, startedAt: Date.now() };
      calls.push(call);
      await behave(m);
      call.endedAt = Date.now();
    }
  }
  @Module({ imports: [EchoStreamDashboardModule.register()], providers: [Handler] })
  class HandlerModule {}
  const app = await createEchoStreamApp(
    { connection: server.url, consumerName: name, shutdownTimeoutMs: 3000 },
    HandlerModule,
    new CaptureLogger(),
  );
  apps.push(app);
  await app.init();
  return app;
}

const statsOf = (app: INestApplication) => app.get(ConsumerStats).snapshot()[0];

/** XPENDING and lag of the group summed over the partitions. */
async function groupTotals(stream: string): Promise<{ pending: number; lag: number }> {
  let pending = 0;
  let lag = 0;
  for (let i = 0; i < PARTITIONS; i++) {
    const groups = (await redis.xinfo('GROUPS', partitionStreamOf(stream, i))) as unknown[][];
    const g = groups.map((flat) => {
      const map = new Map<string, unknown>();
      for (let j = 0; j < flat.length; j += 2) map.set(String(flat[j]), flat[j + 1]);
      return map;
    });
    const mine = g.find((m) => m.get('name') === 'g');
    pending += Number(mine?.get('pending') ?? 0);
    lag += Number(mine?.get('lag') ?? 0);
  }
  return { pending, lag };
}

let n = 0;
const fresh = () => `parts-pause-${process.pid}-${++n}`;

/** Group g's pause as `echo-stream --json inspect` of the partitioned stream shows it. */
async function inspectedPause(stream: string): Promise<{ paused: boolean; since: string | null }> {
  const inspected = await runCliProcess(['--url', server.url, '--json', 'inspect', stream]);
  expect(inspected.stderr).toBe('');
  const view = JSON.parse(inspected.stdout) as {
    groups: Array<{ group: string; paused: boolean; pausedSince: string | null }>;
  };
  const g = view.groups.find((each) => each.group === 'g')!;
  return { paused: g.paused, since: g.pausedSince };
}

describe('a paused partitioned group', () => {
  it('holds every partition loop of every process until resumed, finishing what is in hand', async () => {
    const stream = fresh();
    const calls: Call[] = [];
    let releaseSlow: () => void = () => undefined;
    const slowGate = new Promise<void>((resolve) => (releaseSlow = resolve));
    const behave = async (m: StreamMessage<{ seq: number }>): Promise<void> => {
      if (m.key === 'slow') await slowGate;
      else await sleep(2);
    };
    const a = await startApp('a', stream, calls, behave);
    const b = await startApp('b', stream, calls, behave);
    await waitFor(
      () => statsOf(a).partitions?.length === 2 && statsOf(b).partitions?.length === 2,
      { timeoutMs: 10_000, message: 'two partitions each' },
    );
    const producer = a.get(StreamProducer);
    await producer.publish(stream, { seq: 0 }, { key: 'slow' });
    await waitFor(() => calls.some((c) => c.key === 'slow'), { message: 'slow entry in hand' });

    // pause on the partitioned stream's name (no Redis stream of that name) through the CLI
    const paused = await runCliProcess(['--url', server.url, '--json', 'pause', stream, 'g']);
    expect(paused.code).toBe(0);
    expect(JSON.parse(paused.stdout)).toEqual({ stream, group: 'g', paused: true, was: false });
    expect(await a.get(EchoStreamAdmin).isPaused(stream, 'g')).toBe(true);
    // the entry in hand finishes while the loops stop reading
    await sleep(CLAIM_INTERVAL_MS * 2);
    releaseSlow();
    await waitFor(() => statsOf(a).state === 'paused' && statsOf(b).state === 'paused', {
      timeoutMs: 5000,
      message: 'both processes paused',
    });
    await waitFor(() => calls.find((c) => c.key === 'slow')?.endedAt !== undefined, {
      message: 'the entry in hand finished',
    });
    await waitFor(async () => (await groupTotals(stream)).pending === 0, {
      message: 'the finished entry acked while paused',
    });

    // entries published while paused are not read by any partition loop
    const before = calls.length;
    const perKey = new Map<string, number>();
    for (let i = 0; i < 24; i++) {
      const key = `k${i % 8}`;
      const seq = perKey.get(key) ?? 0;
      perKey.set(key, seq + 1);
      await producer.publish(stream, { seq }, { key });
    }
    await sleep(CLAIM_INTERVAL_MS * 4);
    expect(calls.length).toBe(before);
    expect(await groupTotals(stream)).toEqual({ pending: 0, lag: 24 });

    // the dashboard shows the flag on the partitioned group's row
    const row = (await a.get(DashboardService).overview()).streams
      .find((s) => s.stream === stream)!
      .groups.find((g) => g.group === 'g')!;
    expect(row.pausedSince).not.toBeNull();
    expect(row.state).toBe('paused');
    // and so does `echo-stream inspect` of the partitioned stream
    expect(await inspectedPause(stream)).toEqual({ paused: true, since: row.pausedSince });
    const text = await runCliProcess(['--url', server.url, 'inspect', stream]);
    expect(text.stdout).toContain(`group g: 2 owner(s), paused since ${row.pausedSince}`);

    // a process that joins while paused takes its partitions and stays paused
    const c = await startApp('c', stream, calls, behave);
    await waitFor(() => (statsOf(c).partitions?.length ?? 0) >= 1, {
      timeoutMs: 10_000,
      message: 'the joiner owns partitions',
    });
    await waitFor(() => statsOf(c).state === 'paused', { message: 'the joiner paused' });
    await sleep(CLAIM_INTERVAL_MS * 3);
    expect(calls.length).toBe(before);

    // the dashboard's resume brings every partition back; every entry handled once, in key order
    await a.get(DashboardService).setPaused(stream, 'g', false);
    await waitFor(() => calls.filter((call) => call.endedAt !== undefined).length === before + 24, {
      timeoutMs: 15_000,
      message: 'all 24 handled after the resume',
    });
    for (const [key, count] of perKey) {
      const seqs = calls
        .filter((call) => call.key === key)
        .sort((x, y) => x.startedAt - y.startedAt)
        .map((call) => call.seq);
      expect(seqs).toEqual(Array.from({ length: count }, (_, i) => i));
    }
    await waitFor(() => [a, b, c].every((app) => statsOf(app).state === 'running'), {
      message: 'every process running again',
    });
    expect(await a.get(EchoStreamAdmin).isPaused(stream, 'g')).toBe(false);
    expect(await inspectedPause(stream)).toEqual({ paused: false, since: null });
    const resumed = await runCliProcess(['--url', server.url, '--json', 'resume', stream, 'g']);
    expect(JSON.parse(resumed.stdout)).toEqual({ stream, group: 'g', paused: false, was: false });
    await waitFor(async () => (await groupTotals(stream)).pending === 0, {
      message: 'everything acked',
    });
  }, 60_000);

  it('is refused by the CLI and the dashboard for a group no partition has', async () => {
    const stream = fresh();
    const app = await startApp('a', stream, [], () => Promise.resolve());
    await waitFor(() => statsOf(app).partitions?.length === PARTITIONS, {
      timeoutMs: 10_000,
      message: 'all partitions owned',
    });
    const refused = await runCliProcess(['--url', server.url, 'pause', stream, 'nope']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/no group 'nope' on stream/);
    await expect(app.get(DashboardService).setPaused(stream, 'nope', true)).rejects.toThrow(
      /has no group 'nope'/,
    );
    expect(await app.get(EchoStreamAdmin).isPaused(stream, 'nope')).toBe(false);
  }, 30_000);
});
