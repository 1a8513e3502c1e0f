import { Redis } from 'ioredis';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { makeConsumer } from '../support/engine';
import { waitFor } from '../support/wait-for';

let n = 0;
const fresh = () => `recovery-${process.pid}-${++n}`;

afterAll(async () => {
  await stopAllRedisServers();
});

async function pendingCount(redis: Redis, stream: string, group: string): Promise<number> {
  const summary = (await redis.xpending(stream, group)) as [number, ...unknown[]];
  return Number(summary[0]);
}

describe('StreamConsumer recovers from Redis-side faults', () => {
  it('re-creates a destroyed group and a deleted stream, and keeps consuming', async () => {
    const server = await RedisServer.start();
    const redis = server.client();
    const stream = fresh();
    const seen: string[] = [];
    const { consumer, control, logger } = makeConsumer({
      url: server.url,
      stream,
      group: 'g',
      handle: (m) => void seen.push(m.id),
    });
    consumer.start();
    await waitFor(() => consumer.snapshot().state === 'running');
    await redis.xadd(stream, '*', 'id', 'a', 'data', '1');
    await waitFor(() => seen.includes('a'));

    await redis.xgroup('DESTROY', stream, 'g');
    await redis.xadd(stream, '*', 'id', 'b', 'data', '2');
    await waitFor(() => seen.includes('b'), {
      timeoutMs: 5000,
      message: 'b handled after XGROUP DESTROY',
    });

    await redis.del(stream);
    await waitFor(async () => (await redis.exists(stream)) === 1, {
      message: 'stream re-created by MKSTREAM',
    });
    await redis.xadd(stream, '*', 'id', 'c', 'data', '3');
    await waitFor(() => seen.includes('c'), { timeoutMs: 5000, message: 'c handled after DEL' });
    // acked with the next read, a moment after its handler returned
    await waitFor(async () => (await pendingCount(redis, stream, 'g')) === 0, {
      message: 'c acked after DEL',
    });
    expect(logger.has(/group or stream is gone/)).toBe(true);
    await consumer.stop(1000);
    control.disconnect();
  });

  it('is loud and degraded on a WRONGTYPE key, leaves it untouched, and other loops go on', async () => {
    const server = await RedisServer.start();
    const redis = server.client();
    const bad = fresh();
    const good = fresh();
    await redis.set(bad, 'not a stream');
    const seen: string[] = [];
    const broken = makeConsumer({ url: server.url, stream: bad, group: 'g' });
    const healthy = makeConsumer({
      url: server.url,
      stream: good,
      group: 'g',
      handle: (m) => void seen.push(m.id),
    });
    broken.consumer.start();
    healthy.consumer.start();
    await waitFor(() => broken.consumer.snapshot().state === 'degraded');
    await redis.xadd(good, '*', 'id', 'ok-1', 'data', '{}');
    await waitFor(() => seen.includes('ok-1'));
    expect(broken.logger.has(/error .*holds a value that is not a stream/)).toBe(true);
    expect(broken.consumer.snapshot().lastError).toMatch(/WRONGTYPE/);
    expect(await redis.get(bad)).toBe('not a stream');
    expect(healthy.consumer.snapshot().state).toBe('running');
    await Promise.all([broken.consumer.stop(1000), healthy.consumer.stop(1000)]);
    broken.control.disconnect();
    healthy.control.disconnect();
  });

  it('rides out a Redis restart without persistence: degraded, then re-creates the group and goes on', async () => {
    const server = await RedisServer.start();
    const stream = fresh();
    const seen: string[] = [];
    const { consumer, control } = makeConsumer({
      url: server.url,
      stream,
      group: 'g',
      handle: (m) => void seen.push(m.id),
    });
    consumer.start();
    let redis = server.client();
    await redis.xadd(stream, '*', 'id', 'before', 'data', '{}');
    await waitFor(() => seen.includes('before'));
    await server.kill('SIGKILL');
    await waitFor(() => consumer.snapshot().state === 'degraded', { timeoutMs: 5000 });
    await server.restart();
    redis = server.client();
    await waitFor(() => consumer.snapshot().state === 'running', {
      timeoutMs: 10_000,
      message: 'loop recovered',
    });
    await redis.xadd(stream, '*', 'id', 'after', 'data', '{}');
    await waitFor(() => seen.includes('after'), { timeoutMs: 5000 });
    // acked with the next read, a moment after its handler returned
    await waitFor(async () => (await pendingCount(redis, stream, 'g')) === 0, {
      message: "'after' acked",
    });
    await consumer.stop(1000);
    control.disconnect();
  });

  it('retries as soon as the connection is back instead of sleeping out a long backoff', async () => {
    const server = await RedisServer.start();
    const stream = fresh();
    const { consumer, control, logger } = makeConsumer({ url: server.url, stream, group: 'g' });
    consumer.start();
    await waitFor(() => consumer.snapshot().state === 'running');
    await server.kill('SIGKILL');
    // let the backoff grow to seconds: 100, 200, 400, 800, 1600 ms...
    await waitFor(() => logger.has(/retrying in 1600 ms/), { timeoutMs: 10_000 });
    const lastDelay = (): number => {
      const line = [...logger.lines].reverse().find((l) => /retrying in \d+ ms/.test(l)) ?? '';
      return Number(/retrying in (\d+) ms/.exec(line)?.[1]);
    };
    await waitFor(() => lastDelay() >= 3200, { timeoutMs: 10_000 });
    const sleepingSince = Date.now();
    const sleepingFor = lastDelay();
    await server.restart();
    try {
      await waitFor(() => consumer.snapshot().state === 'running', { timeoutMs: 40_000 });
      // woken by the reconnect, not by the end of its backoff sleep
      expect(Date.now() - sleepingSince).toBeLessThan(sleepingFor);
    } finally {
      await consumer.stop(1000);
      control.disconnect();
    }
  });
});
