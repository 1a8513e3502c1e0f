/**
 * Rate limits (docs/delivery.md), engine level, on a real redis-server. Invariants: no window of `perMs`
 * sees more than `max` handler starts (+10 %), per process or over every consumer of the group,
 * and a throttled loop never holds more read entries than it may start.
 */
import { Redis } from 'ioredis';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { makeConsumer, type TestConsumerOptions } from '../support/engine';
import { waitFor } from '../support/wait-for';
import type { StreamConsumer } from '../../lib/consumer/loop/stream-consumer';
import { rateBudgetKey } from '../../lib/redis/package-keys';

let server: RedisServer;
let redis: Redis;
let n = 0;
const fresh = () => `rate-${process.pid}-${++n}`;
const running: Array<{ consumer: StreamConsumer; control: Redis }> = [];

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterEach(async () => {
  await Promise.all(
    running.splice(0).map(async (c) => {
      await c.consumer.stop(2000);
      c.control.disconnect();
    }),
  );
});
afterAll(async () => {
  await stopAllRedisServers();
});

function start(opts: Omit<TestConsumerOptions, 'url'>): StreamConsumer {
  const made = makeConsumer({ url: server.url, ...opts });
  running.push(made);
  made.consumer.start();
  return made.consumer;
}

async function publishMany(stream: string, count: number): Promise<void> {
  const multi = redis.multi();
  for (let i = 0; i < count; i++) multi.xadd(stream, '*', 'id', `e${i}`, 'data', '{}');
  await multi.exec();
}

/** Starts per window of `perMs` (fixed windows on the clock, as the limiter counts them). */
function perWindow(starts: number[], perMs: number): number[] {
  const counts = new Map<number, number>();
  for (const at of starts) {
    const w = Math.floor(at / perMs);
    counts.set(w, (counts.get(w) ?? 0) + 1);
  }
  return [...counts.entries()].sort((a, b) => a[0] - b[0]).map(([, c]) => c);
}

describe('rateLimit', () => {
  it("scope 'process': at most max starts per window, and the loop never holds more than it may start", async () => {
    const stream = fresh();
    const starts: number[] = [];
    start({
      stream,
      group: 'g',
      options: { rateLimit: { max: 10, perMs: 400 }, batchSize: 100 },
      handle: () => void starts.push(Date.now()),
    });
    await publishMany(stream, 50);
    let maxHeld = 0;
    await waitFor(
      async () => {
        const summary = (await redis.xpending(stream, 'g')) as [number, ...unknown[]];
        maxHeld = Math.max(maxHeld, Number(summary[0]));
        return starts.length === 50 && Number(summary[0]) === 0;
      },
      { intervalMs: 10, timeoutMs: 10_000, message: 'all 50 handled and acked' },
    );
    const windows = perWindow(starts, 400);
    console.log(`process scope, starts per 400 ms window (max 10): ${windows.join(', ')}`);
    expect(Math.max(...windows)).toBeLessThanOrEqual(11); // +10 %
    expect(windows.length).toBeGreaterThanOrEqual(5); // 50 starts at 10 per window
    // a batch of 100 would have claimed all 50 at once: the loop read only what it could start
    expect(maxHeld).toBeLessThanOrEqual(10);
  });

  it("scope 'group': three consumers of the group share one budget kept in Redis", async () => {
    const stream = fresh();
    const starts: number[] = [];
    const by = new Map<string, number>();
    for (const name of ['a', 'b', 'c']) {
      start({
        stream,
        group: 'g',
        consumer: name,
        options: { rateLimit: { max: 12, perMs: 500, scope: 'group' }, batchSize: 5 },
        handle: () => {
          starts.push(Date.now());
          by.set(name, (by.get(name) ?? 0) + 1);
        },
      });
    }
    await publishMany(stream, 72);
    await waitFor(() => starts.length === 72, { timeoutMs: 15_000, message: 'all 72 handled' });
    const windows = perWindow(starts, 500);
    console.log(
      `group scope, starts per 500 ms window over 3 consumers (max 12): ${windows.join(', ')}; ` +
        `per consumer ${[...by.entries()].map(([k, v]) => `${k}=${v}`).join(' ')}`,
    );
    expect(Math.max(...windows)).toBeLessThanOrEqual(13); // 12 + 10 %
    expect(windows.length).toBeGreaterThanOrEqual(6);
    expect(by.size).toBeGreaterThanOrEqual(2); // shared, not one consumer's own limit
    // the budget is one key per group (no key per entry), expiring on its own
    expect(await redis.exists(rateBudgetKey(stream, 'g'))).toBe(1);
    expect(await redis.pttl(rateBudgetKey(stream, 'g'))).toBeGreaterThan(0);
  });

  it('retries are rate limited too, and a limited loop stops promptly', async () => {
    const stream = fresh();
    const starts: number[] = [];
    const consumer = start({
      stream,
      group: 'g',
      options: {
        rateLimit: { max: 4, perMs: 300 },
        retry: { type: 'fixed', delayMs: 50 },
        minIdleMs: 60_000,
      },
      handle: (m) => {
        starts.push(Date.now());
        if (m.attempts === 1) throw new Error('first attempt fails');
      },
    });
    await publishMany(stream, 8);
    await waitFor(() => starts.length === 16, { timeoutMs: 10_000, message: '8 x 2 attempts' });
    expect(Math.max(...perWindow(starts, 300))).toBeLessThanOrEqual(4);
    await publishMany(stream, 50); // a backlog the loop is throttled on
    const stopping = Date.now();
    const [made] = running.splice(
      running.findIndex((r) => r.consumer === consumer),
      1,
    );
    await consumer.stop(2000);
    made.control.disconnect();
    expect(Date.now() - stopping).toBeLessThan(1500);
  });
});
