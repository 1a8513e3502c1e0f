/**
 * When Redis is unreachable (issue 17): the app says why (cause + host:port, never connected vs.
 * lost, never the password) in its logs, loop errors, `ConsumerStats` and the health indicator;
 * loops recover by themselves once Redis answers; `publish` / `publishMany` reject within
 * `publishTimeoutMs` with an `EchoStreamPublishError` carrying the cause, and never write an
 * entry twice when a reply was merely slow.
 *
 * Real `redis-server` processes; a TcpProxy blackholes or slows the app's link.
 */
import 'reflect-metadata';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import type { Redis } from 'ioredis';
import {
  ConsumerStats,
  EchoStreamConnectionError,
  EchoStreamHealthError,
  EchoStreamHealthIndicator,
  EchoStreamPublishError,
  StreamHandler,
  StreamProducer,
  type StreamMessage,
} from '../../lib';
import { EchoStreamConnections } from '../../lib/runtime/echo-stream.connections';
import { startPlainTextServer } from '../support/plain-text-server';
import { freePort, RedisServer, stopAllRedisServers } from '../support/redis-server';
import { TcpProxy } from '../support/tcp-proxy';
import { sleep, waitFor } from '../support/wait-for';
import { report } from './support/in-process-loop';
import { CaptureLogger, createEchoStreamApp } from './support/nest-app';

const PASSWORD = 's3cret-17-pw';
const PUBLISH_TIMEOUT_MS = 1000;
/** Slack for a loaded machine: timers fire late, never early. */
const UPPER_SLACK_MS = 1500;

const apps: INestApplication[] = [];
const proxies: TcpProxy[] = [];

afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
  await Promise.all(proxies.splice(0).map((p) => p.stop()));
  await stopAllRedisServers();
});

/** Runs `fn`, returning what it rejected with and how long that took. */
async function rejection(fn: () => Promise<unknown>): Promise<{ err: unknown; ms: number }> {
  const startedAt = Date.now();
  try {
    await fn();
  } catch (err) {
    return { err, ms: Date.now() - startedAt };
  }
  throw new Error('expected a rejection');
}

/** Every entry of `stream` carrying branded id `id` (read straight from the server). */
async function entriesWithId(redis: Redis, stream: string, id: string): Promise<string[]> {
  const entries = await redis.xrange(stream, '-', '+');
  return entries.filter(([, fields]) => fields[0] === 'id' && fields[1] === id).map(([e]) => e);
}

@Module({})
class NoHandlers {}

async function producerApp(
  connection: string,
  logs = new CaptureLogger(),
): Promise<{ app: INestApplication; producer: StreamProducer; logs: CaptureLogger }> {
  const app = await createEchoStreamApp(
    { connection, publishTimeoutMs: PUBLISH_TIMEOUT_MS, shutdownTimeoutMs: 1000 },
    NoHandlers,
    logs,
  );
  apps.push(app);
  await app.init();
  return { app, producer: app.get(StreamProducer), logs };
}

describe('boot against a closed port, then Redis starts on it', () => {
  const STREAM = `down-boot-${process.pid}`;
  const seen: string[] = [];

  @Injectable()
  class BootHandler {
    @StreamHandler(STREAM, 'g', { blockMs: 200 })
    handle(message: StreamMessage<{ n: number }>): void {
      seen.push(message.id);
    }
  }

  @Module({ providers: [BootHandler] })
  class BootModule {}

  it('names the cause while down (logs, loop, stats, health, publish) and recovers by itself', async () => {
    // Invariant: the app boots without Redis; every text names the cause and the address (never
    // the password); once Redis listens the loop runs again without help, the texts say so, and
    // an entry published then is handled.
    const port = await freePort();
    const address = `127.0.0.1:${port}`;
    const logs = new CaptureLogger();
    const app = await createEchoStreamApp(
      {
        connection: `redis://:${PASSWORD}@${address}`,
        consumerName: 'down-boot',
        publishTimeoutMs: PUBLISH_TIMEOUT_MS,
        shutdownTimeoutMs: 1000,
      },
      BootModule,
      logs,
    );
    apps.push(app);
    await app.init();
    const stats = app.get(ConsumerStats);
    const health = app.get(EchoStreamHealthIndicator);
    const refused = new RegExp(
      `cannot connect to Redis at ${address.replace(/\./g, '\\.')} \\(never connected\\): ` +
        `connection refused \\(connect ECONNREFUSED ${address.replace(/\./g, '\\.')}\\)`,
    );

    // down: the loop degrades with the cause
    await waitFor(() => stats.get(STREAM, 'g')?.state === 'degraded', {
      timeoutMs: 5000,
      message: 'the loop degraded',
    });
    expect(stats.get(STREAM, 'g')?.lastError).toMatch(refused);
    await waitFor(() => logs.matching(/Redis error \(cannot connect/).length >= 2, {
      timeoutMs: 5000,
      message: 'two loop backoff lines',
    });
    const loopLines = logs.matching(new RegExp(`^error ${STREAM}/g: `));
    for (const line of loopLines) expect(line).toMatch(refused);
    // one line at start-up says why, for all the connections that fail
    const startup = logs.matching(/^warn EchoStreamConnections: /);
    expect(startup).toHaveLength(1);
    expect(startup[0]).toMatch(
      new RegExp(
        `Cannot connect to Redis at ${address.replace(/\./g, '\\.')} \\(never connected\\)`,
      ),
    );
    expect(startup[0]).toMatch(/connection refused/);
    expect(stats.connection()).toMatchObject({
      address,
      state: 'down',
      everConnected: false,
      reason: 'refused',
      error: expect.stringMatching(refused),
    });
    const unhealthy = await health.isHealthy().then(
      () => null,
      (e: unknown) => e,
    );
    expect(unhealthy).toBeInstanceOf(EchoStreamHealthError);
    const healthError = unhealthy as EchoStreamHealthError;
    expect(healthError.message).toMatch(refused);
    expect(healthError.causes['echo-stream'].redis).toMatchObject({ reason: 'refused', address });
    expect(healthError.causes['echo-stream'].consumers[0]).toMatchObject({
      state: 'degraded',
      lastError: expect.stringMatching(refused),
    });

    // publish while down: rejected within the bound, nothing written, the cause attached
    const producer = app.get(StreamProducer);
    const { err, ms } = await rejection(() => producer.publish(STREAM, { n: 0 }));
    expect(err).toBeInstanceOf(EchoStreamPublishError);
    expect(err).toBeInstanceOf(EchoStreamConnectionError);
    expect(err).toMatchObject({
      reason: 'refused',
      address,
      everConnected: false,
      written: false,
      stream: STREAM,
      timeoutMs: PUBLISH_TIMEOUT_MS,
    });
    expect((err as Error).message).toMatch(refused);
    expect(ms).toBeGreaterThanOrEqual(PUBLISH_TIMEOUT_MS - 5);
    expect(ms).toBeLessThan(PUBLISH_TIMEOUT_MS + UPPER_SLACK_MS);

    // Redis starts on that port: the loop recovers by itself
    const server = await RedisServer.start({ port, password: PASSWORD });
    const upAt = Date.now();
    await waitFor(() => stats.get(STREAM, 'g')?.state === 'running', {
      timeoutMs: 10_000,
      message: 'the loop running again',
    });
    const recoveredMs = Date.now() - upAt;
    await waitFor(() => logs.has(/recovered after \d+ failed attempts/), {
      timeoutMs: 5000,
      message: 'the loop says it recovered',
    });
    await waitFor(() => logs.has(/^log EchoStreamConnections: Redis at .* answers again/), {
      timeoutMs: 5000,
      message: 'the recovery line',
    });
    expect(logs.matching(/answers again/)[0]).toContain(address);
    expect(stats.connection()).toMatchObject({ state: 'ready', everConnected: true, error: null });
    await expect(health.isHealthy()).resolves.toMatchObject({ 'echo-stream': { status: 'up' } });

    const receipt = await producer.publish(STREAM, { n: 1 });
    await waitFor(() => seen.includes(receipt.id), { timeoutMs: 5000, message: 'handled' });
    const redis = server.client();
    expect(await entriesWithId(redis, STREAM, receipt.id)).toHaveLength(1);

    // a lost connection says "lost", not "never connected", and recovers the same way
    await server.kill();
    const lost = new RegExp(
      `connection to Redis at ${address.replace(/\./g, '\\.')} lost: connection refused`,
    );
    await waitFor(() => lost.test(stats.get(STREAM, 'g')?.lastError ?? ''), {
      timeoutMs: 5000,
      message: 'the loop says the connection was lost',
    });
    expect(stats.get(STREAM, 'g')?.state).toBe('degraded');
    await waitFor(() => logs.has(/^warn EchoStreamConnections: Connection to Redis at .* lost: /), {
      timeoutMs: 5000,
      message: 'the outage line',
    });
    expect(stats.connection()).toMatchObject({ state: 'down', everConnected: true });
    const lostPublish = await rejection(() => producer.publish(STREAM, { n: 2 }));
    expect(lostPublish.err).toMatchObject({ everConnected: true, written: false, address });
    expect(lostPublish.err).toBeInstanceOf(EchoStreamPublishError);
    await server.restart();
    await waitFor(() => stats.get(STREAM, 'g')?.state === 'running', {
      timeoutMs: 10_000,
      message: 'the loop running after the restart',
    });
    await waitFor(() => logs.matching(/answers again/).length === 2, {
      timeoutMs: 5000,
      message: 'a second recovery line',
    });

    // never the password, anywhere
    expect(logs.lines.some((line) => line.includes(PASSWORD))).toBe(false);
    expect((err as Error).message).not.toContain(PASSWORD);
    expect(healthError.message).not.toContain(PASSWORD);
    report(
      'boot while down',
      `${loopLines.length} loop lines, 1 start-up line; publish rejected in ${ms} ms; ` +
        `loop running ${recoveredMs} ms after Redis started`,
    );
  });
});

describe('publish fails fast', () => {
  it('closed port: publish and publishMany reject after publishTimeoutMs, nothing written', async () => {
    // Invariant: with nothing listening, a publish neither hangs nor queues: it rejects within
    // publishTimeoutMs (+ slack) with written: false and the cause; a producer-only app's health
    // is down with the cause.
    const port = await freePort();
    const address = `127.0.0.1:${port}`;
    const { app, producer, logs } = await producerApp(`redis://:${PASSWORD}@${address}`);
    const one = await rejection(() => producer.publish('orders', { n: 1 }));
    const many = await rejection(() => producer.publishMany('orders', [{ n: 2 }, { n: 3 }]));
    for (const { err, ms } of [one, many]) {
      expect(err).toBeInstanceOf(EchoStreamPublishError);
      expect(err).toMatchObject({
        reason: 'refused',
        address,
        written: false,
        everConnected: false,
      });
      expect((err as Error).message).toContain(`connect ECONNREFUSED ${address}`);
      expect((err as Error).message).not.toContain(PASSWORD);
      expect((err as EchoStreamPublishError).cause).toBeInstanceOf(EchoStreamConnectionError);
      expect(ms).toBeGreaterThanOrEqual(PUBLISH_TIMEOUT_MS - 5);
      expect(ms).toBeLessThan(PUBLISH_TIMEOUT_MS + UPPER_SLACK_MS);
    }
    expect((many.err as EchoStreamPublishError).ids).toHaveLength(2);

    // a crowd of callers waits without a listener each on the connection, and leaves in time
    const startedAt = Date.now();
    const crowd = Array.from({ length: 50 }, (_, n) =>
      producer.publish('orders', { n }).then(
        () => 'written',
        (err: unknown) => (err as EchoStreamPublishError).written,
      ),
    );
    const shared = app.get(EchoStreamConnections).client;
    expect(shared.listenerCount('ready')).toBeLessThan(10);
    expect(await Promise.all(crowd)).toEqual(new Array(50).fill(false));
    expect(Date.now() - startedAt).toBeLessThan(PUBLISH_TIMEOUT_MS + UPPER_SLACK_MS);

    await expect(app.get(EchoStreamHealthIndicator).isHealthy()).rejects.toMatchObject({
      causes: { 'echo-stream': { status: 'down', redis: { reason: 'refused', address } } },
    });
    expect(logs.lines.some((line) => line.includes(PASSWORD))).toBe(false);
    report('closed port', `publish ${one.ms} ms, publishMany ${many.ms} ms`);
  });

  it('TLS to a server that does not speak it: publish names the TLS failure', async () => {
    // Invariant: a `rediss://` URL pointing at a plain server fails with reason 'tls', said once
    // at start-up and on the publish error.
    const plain = await startPlainTextServer();
    const { port } = plain;
    try {
      const { producer, logs } = await producerApp(`rediss://127.0.0.1:${port}`);
      const { err, ms } = await rejection(() => producer.publish('orders', { n: 1 }));
      expect(err).toBeInstanceOf(EchoStreamPublishError);
      expect(err).toMatchObject({ reason: 'tls', address: `127.0.0.1:${port}`, written: false });
      expect((err as Error).message).toContain('TLS failure');
      expect(ms).toBeLessThan(PUBLISH_TIMEOUT_MS + UPPER_SLACK_MS);
      expect(logs.matching(/^warn EchoStreamConnections: .*TLS failure/)).toHaveLength(1);
    } finally {
      for (const app of apps.splice(0)) await app.close();
      await plain.close();
    }
  });

  it('blackholed link: publish and publishMany reject after publishTimeoutMs, outcome unknown', async () => {
    // Invariant: on a link that swallows everything (half-open), a publish sent into it rejects
    // within publishTimeoutMs (+ slack) with written: 'unknown' and reason 'timeout', naming the
    // address; the ids are on the error so the caller can publish again under them.
    const server = await RedisServer.start();
    const proxy = await TcpProxy.start(server.port);
    proxies.push(proxy);
    const address = `127.0.0.1:${proxy.port}`;
    const { producer } = await producerApp(`redis://${address}`);
    await producer.publish('orders', { n: 0 });
    proxy.blackhole(true);
    const one = await rejection(() => producer.publish('orders', { n: 1 }));
    const many = await rejection(() => producer.publishMany('orders', [{ n: 2 }, { n: 3 }]));
    for (const { err, ms } of [one, many]) {
      expect(err).toBeInstanceOf(EchoStreamPublishError);
      expect(err).toMatchObject({ reason: 'timeout', address, written: 'unknown' });
      expect((err as Error).message).toContain(`no reply from Redis at ${address} within 1000 ms`);
      expect(ms).toBeGreaterThanOrEqual(PUBLISH_TIMEOUT_MS - 5);
      expect(ms).toBeLessThan(PUBLISH_TIMEOUT_MS + UPPER_SLACK_MS);
    }
    expect((one.err as EchoStreamPublishError).ids).toHaveLength(1);
    expect((many.err as EchoStreamPublishError).ids).toHaveLength(2);
    report('blackhole', `publish ${one.ms} ms, publishMany ${many.ms} ms`);
  });

  it('slow link: a reply slower than publishTimeoutMs rejects in time, and the entry is written once', async () => {
    // Invariant: a write whose reply is late is reported as outcome unknown within
    // publishTimeoutMs and is in the stream exactly once, also when the link drops before the late
    // reply arrives (ioredis would otherwise re-send it on the new connection).
    const server = await RedisServer.start();
    const redis = server.client();
    const proxy = await TcpProxy.start(server.port);
    proxies.push(proxy);
    const { producer } = await producerApp(`redis://127.0.0.1:${proxy.port}`);
    const stream = `down-slow-${process.pid}`;
    await producer.publish(stream, { n: 0 });
    const oneWayMs = 700; // a round trip of 1400 ms > publishTimeoutMs

    // 1. the late reply arrives after the caller was told
    proxy.setDelay(oneWayMs);
    const late = await rejection(() => producer.publish(stream, { n: 1 }));
    expect(late.err).toBeInstanceOf(EchoStreamPublishError);
    expect(late.err).toMatchObject({ reason: 'timeout', written: 'unknown', stream });
    expect(late.ms).toBeGreaterThanOrEqual(PUBLISH_TIMEOUT_MS - 5);
    expect(late.ms).toBeLessThan(PUBLISH_TIMEOUT_MS + UPPER_SLACK_MS);
    const lateId = (late.err as EchoStreamPublishError).ids[0];
    await sleep(2 * oneWayMs);

    // 2. the link drops after the server wrote the entry, before its reply came back
    const cut = await rejection(() => producer.publishMany(stream, [{ n: 2 }]));
    expect(cut.err).toMatchObject({ reason: 'timeout', written: 'unknown' });
    const cutId = (cut.err as EchoStreamPublishError).ids[0];
    await waitFor(async () => (await entriesWithId(redis, stream, cutId)).length > 0, {
      timeoutMs: 3000,
      message: 'the slow write reached the server',
    });
    proxy.cutAll();
    proxy.setDelay(0);

    // the producer reconnects by itself; later publishes go through
    const after = await waitFor(() => producer.publish(stream, { n: 3 }).catch(() => undefined), {
      timeoutMs: 5000,
      message: 'a publish after the cut',
    });
    if (!after) throw new Error('unreachable: waitFor returns a receipt');
    await sleep(1000); // room for a re-sent write to land
    expect(await entriesWithId(redis, stream, lateId)).toHaveLength(1);
    expect(await entriesWithId(redis, stream, cutId)).toHaveLength(1);
    expect(await entriesWithId(redis, stream, after.id)).toHaveLength(1);
    expect(await redis.xlen(stream)).toBe(4);
    report(
      'slow link',
      `late reply rejected in ${late.ms} ms, cut reply in ${cut.ms} ms; no duplicate`,
    );
  });
});
