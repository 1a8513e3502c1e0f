import { Redis } from 'ioredis';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { makeConsumer } from '../support/engine';
import { waitFor } from '../support/wait-for';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';

let server: RedisServer;
let redis: Redis;
let n = 0;
const fresh = () => `engine-${process.pid}-${++n}`;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterAll(async () => {
  await stopAllRedisServers();
});

async function publish(stream: string, count: number, from = 0): Promise<void> {
  const pipeline = redis.pipeline();
  for (let i = from; i < from + count; i++) {
    pipeline.xadd(stream, '*', 'id', `evt-${i}`, 'data', JSON.stringify({ i }));
  }
  await pipeline.exec();
}

async function pendingCount(stream: string, group: string): Promise<number> {
  const summary = (await redis.xpending(stream, group)) as [number, ...unknown[]];
  return Number(summary[0]);
}

describe('StreamConsumer on a real Redis', () => {
  it('handles many messages in order and acks each', async () => {
    const stream = fresh();
    const seen: number[] = [];
    const { consumer, control } = makeConsumer({
      url: server.url,
      stream,
      group: 'g',
      handle: (m) => void seen.push((m.payload as { i: number }).i),
    });
    await publish(stream, 500);
    consumer.start();
    await waitFor(() => seen.length === 500, { message: 'all 500 handled' });
    await consumer.stop(1000);
    control.disconnect();
    expect(seen).toEqual(Array.from({ length: 500 }, (_, i) => i));
    expect(await pendingCount(stream, 'g')).toBe(0);
    expect(consumer.snapshot()).toMatchObject({
      totalRead: 500,
      totalAcked: 500,
      totalErrors: 0,
      state: 'stopped',
    });
  });

  it('leaves a failed entry pending and redelivers it with attempts 2', async () => {
    const stream = fresh();
    const attempts: number[] = [];
    const { consumer, control } = makeConsumer({
      url: server.url,
      stream,
      group: 'g',
      options: { minIdleMs: 300, claimIntervalMs: 100 },
      handle: (m: StreamMessage<unknown>) => {
        attempts.push(m.attempts);
        if (m.attempts === 1) throw new Error('first try fails');
      },
    });
    await publish(stream, 1);
    consumer.start();
    await waitFor(() => attempts.length === 1);
    expect(await pendingCount(stream, 'g')).toBe(1);
    await waitFor(() => attempts.length === 2, { timeoutMs: 5000 });
    await waitFor(async () => (await pendingCount(stream, 'g')) === 0);
    await consumer.stop(1000);
    control.disconnect();
    expect(attempts).toEqual([1, 2]);
    expect(consumer.snapshot()).toMatchObject({ totalErrors: 1, totalAcked: 1 });
  });

  it('stops promptly while parked on a long blocking read', async () => {
    const stream = fresh();
    const { consumer, control } = makeConsumer({
      url: server.url,
      stream,
      group: 'g',
      options: { blockMs: 10_000 },
    });
    consumer.start();
    await waitFor(() => consumer.snapshot().state === 'running');
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await consumer.stop(5000);
    control.disconnect();
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
