/**
 * A paused group (EchoStreamAdmin.pause/resume/isPaused; docs/operations.md "Pausing a group"), on
 * a real redis-server through the Nest module: within claimIntervalMs every loop of the group on
 * the stream stops reading and starting entries, entries in hand finish, waiting retries keep
 * waiting, nothing is released or lost (XPENDING), a process that boots while paused starts
 * nothing, and a resume brings it all back. Each test states the invariant it checks.
 */
import 'reflect-metadata';
import { Injectable, type INestApplicationContext, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Module } from '@nestjs/common';
import type { Redis } from 'ioredis';
import {
  ConsumerStats,
  EchoStreamAdmin,
  EchoStreamHealthIndicator,
  EchoStreamModule,
  StreamHandler,
  type EchoStreamModuleOptions,
  type StreamHandlerOptions,
  type StreamMessage,
} from '../../lib';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

const GROUP = 'g';
const CLAIM_INTERVAL_MS = 300;

let server: RedisServer;
let redis: Redis;
let seq = 0;
const apps = new Set<INestApplicationContext>();
const fresh = (): string => `pause-${process.pid}-${++seq}`;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterEach(async () => {
  await Promise.all([...apps].map((app) => app.close()));
  apps.clear();
});
afterAll(async () => {
  await stopAllRedisServers();
});

type Handle = (message: StreamMessage<{ n: number }>) => unknown;

/** A provider with one `@StreamHandler` on `stream`/`g` calling `handle`. */
function handlerOn(stream: string, handle: Handle, options: Partial<StreamHandlerOptions>): Type {
  @Injectable()
  class PausedHandler {
    handle(message: StreamMessage<{ n: number }>): unknown {
      return handle(message);
    }
  }
  const descriptor = Object.getOwnPropertyDescriptor(PausedHandler.prototype, 'handle')!;
  StreamHandler(stream, GROUP, {
    claimIntervalMs: CLAIM_INTERVAL_MS,
    blockMs: 5000,
    minIdleMs: 10_000,
    ...options,
  })(PausedHandler.prototype, 'handle', descriptor);
  return PausedHandler;
}

async function boot(
  providers: Type[],
  options: Partial<EchoStreamModuleOptions> = {},
): Promise<INestApplicationContext> {
  @Module({
    imports: [
      EchoStreamModule.forRoot({ connection: server.url, consumerName: `c${++seq}`, ...options }),
    ],
    providers,
  })
  class AppModule {}
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  apps.add(app);
  await app.init();
  return app;
}

async function pendingCount(stream: string): Promise<number> {
  const summary = (await redis.xpending(stream, GROUP)) as [number, ...unknown[]];
  return Number(summary[0]);
}

const stateOf = (app: INestApplicationContext, stream: string): string | undefined =>
  app.get(ConsumerStats).get(stream, GROUP)?.state;

describe.each([
  ['shared reads', true],
  ['a connection per loop', false],
])('pause with %s', (_name, sharedReads) => {
  it('a running loop sees the pause within claimIntervalMs: an entry published while paused is not read; after resume it is handled', async () => {
    const stream = fresh();
    const handled: number[] = [];
    const app = await boot([handlerOn(stream, (m) => handled.push(m.payload.n), {})], {
      sharedReads,
    });
    await waitFor(() => stateOf(app, stream) === 'running', { message: 'running' });
    const admin = app.get(EchoStreamAdmin);

    const pausedAt = Date.now();
    await admin.pause(stream, GROUP);
    expect(await admin.isPaused(stream, GROUP)).toBe(true);
    await waitFor(() => stateOf(app, stream) === 'paused', {
      timeoutMs: CLAIM_INTERVAL_MS * 10,
      message: 'paused within claimIntervalMs',
    });
    // parked in a read of blockMs 5000, it still noticed within the interval (plus slack)
    expect(Date.now() - pausedAt).toBeLessThan(CLAIM_INTERVAL_MS + 1500);
    // the health indicator counts a paused loop healthy
    await expect(app.get(EchoStreamHealthIndicator).isHealthy()).resolves.toBeDefined();

    await redis.xadd(stream, '*', 'id', 'e1', 'data', JSON.stringify({ n: 1 }));
    await sleep(CLAIM_INTERVAL_MS * 4);
    expect(handled).toEqual([]);
    // not read at all: nothing pending, the entry waits in the stream
    expect(await pendingCount(stream)).toBe(0);
    expect(stateOf(app, stream)).toBe('paused');

    const resumedAt = Date.now();
    expect(await admin.resume(stream, GROUP)).toBe(true);
    expect(await admin.isPaused(stream, GROUP)).toBe(false);
    await waitFor(() => handled.length === 1, {
      timeoutMs: CLAIM_INTERVAL_MS * 10,
      message: 'handled after resume',
    });
    expect(Date.now() - resumedAt).toBeLessThan(CLAIM_INTERVAL_MS + 1500);
    expect(handled).toEqual([1]);
    await waitFor(async () => (await pendingCount(stream)) === 0, { message: 'acked' });
    expect(stateOf(app, stream)).toBe('running');
    // resuming a group that is not paused says so
    expect(await admin.resume(stream, GROUP)).toBe(false);
  });

  it('a process that boots while the group is paused starts nothing, and handles the backlog once resumed', async () => {
    const stream = fresh();
    const admin = (await boot([], { sharedReads })).get(EchoStreamAdmin);
    await admin.pause(stream, GROUP);
    await redis.xgroup('CREATE', stream, GROUP, '0', 'MKSTREAM');
    for (let n = 1; n <= 3; n++)
      await redis.xadd(stream, '*', 'id', `e${n}`, 'data', JSON.stringify({ n }));

    const handled: number[] = [];
    const app = await boot([handlerOn(stream, (m) => handled.push(m.payload.n), {})], {
      sharedReads,
    });
    await waitFor(() => stateOf(app, stream) === 'paused', { message: 'paused at boot' });
    await sleep(CLAIM_INTERVAL_MS * 4);
    expect(handled).toEqual([]);
    expect(await pendingCount(stream)).toBe(0);
    expect(await redis.xlen(stream)).toBe(3);

    await admin.resume(stream, GROUP);
    await waitFor(() => handled.length === 3, { message: 'the backlog after resume' });
    expect(handled).toEqual([1, 2, 3]);
    await waitFor(async () => (await pendingCount(stream)) === 0, { message: 'acked' });
  });
});

it('entries in hand finish and are acked; a waiting retry keeps waiting (still pending, ours) until resume', async () => {
  const stream = fresh();
  let releaseSlow!: () => void;
  const slowGate = new Promise<void>((resolve) => (releaseSlow = resolve));
  const calls: Array<{ n: number; attempts: number; at: number }> = [];
  const app = await boot([
    handlerOn(
      stream,
      async (m) => {
        calls.push({ n: m.payload.n, attempts: m.attempts, at: Date.now() });
        if (m.payload.n === 1) await slowGate; // in hand when the pause comes
        if (m.payload.n === 2 && m.attempts === 1) throw new Error('fail once');
      },
      { concurrency: 2, retry: { type: 'fixed', delayMs: 1000 } },
    ),
  ]);
  await waitFor(() => stateOf(app, stream) === 'running', { message: 'running' });
  const admin = app.get(EchoStreamAdmin);
  // one batch (MULTI): the parked read takes both
  await redis
    .multi()
    .xadd(stream, '*', 'id', 'e1', 'data', JSON.stringify({ n: 1 }))
    .xadd(stream, '*', 'id', 'e2', 'data', JSON.stringify({ n: 2 }))
    .exec();
  await waitFor(() => calls.length === 2, { message: 'both started' });
  const failedAt = Date.now();

  await admin.pause(stream, GROUP);
  await sleep(CLAIM_INTERVAL_MS * 2);
  releaseSlow(); // the entry in hand finishes while paused
  await waitFor(() => stateOf(app, stream) === 'paused', { message: 'paused' });
  // e1 finished and was acked; e2 waits for its retry, still pending and ours
  await waitFor(async () => (await pendingCount(stream)) === 1, { message: 'e1 acked' });

  // well past the retry's due time (1000 ms): not retried while paused
  await sleep(Math.max(0, failedAt + 2500 - Date.now()));
  expect(calls.map((c) => c.n)).toEqual([1, 2]);
  const rows = (await redis.xpending(stream, GROUP, '-', '+', 10)) as Array<
    [string, string, number, number]
  >;
  expect(rows).toHaveLength(1);
  const [, owner, , deliveries] = rows[0];
  expect(owner).toBe(app.get(ConsumerStats).get(stream, GROUP)!.consumer);
  expect(deliveries).toBe(1); // not released, not claimed again
  // the heartbeat keeps it claimed: a peer sweeping with a short minIdleMs would not take it
  const [, , idleMs] = rows[0];
  expect(idleMs).toBeLessThan(10_000);

  await admin.resume(stream, GROUP);
  await waitFor(() => calls.length === 3, { message: 'the retry after resume' });
  expect(calls[2]).toMatchObject({ n: 2, attempts: 2 });
  await waitFor(async () => (await pendingCount(stream)) === 0, { message: 'all acked' });
});

it('admin refuses bad arguments, and pause is idempotent and persistent in Redis', async () => {
  const stream = fresh();
  const admin = (await boot([])).get(EchoStreamAdmin);
  await expect(admin.pause('', GROUP)).rejects.toThrow(TypeError);
  await expect(admin.resume(stream, '')).rejects.toThrow(TypeError);
  const before = Date.now();
  await admin.pause(stream, GROUP);
  const since = await admin.pausedSince(stream, GROUP);
  await admin.pause(stream, GROUP);
  expect(await admin.pausedSince(stream, GROUP)).toEqual(since);
  expect(since!.getTime()).toBeGreaterThanOrEqual(before);
  // a key in the stream's hash slot, outliving the app
  expect(await redis.get(`{${stream}}:echo-paused:${GROUP}`)).toBe(String(since!.getTime()));
  const other = (await boot([])).get(EchoStreamAdmin);
  expect(await other.isPaused(stream, GROUP)).toBe(true);
  expect(await other.isPaused(stream, 'other-group')).toBe(false);
});
