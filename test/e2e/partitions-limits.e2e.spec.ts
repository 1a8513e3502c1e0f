/**
 * Limits alike (docs/partitions.md "Order"): a held key's retries count in `rateLimit` and in
 * `concurrency` like any other handler start, through the Nest module on a real redis-server.
 * Invariants: no window of `perMs` sees more than `max` handler starts, retries of held keys
 * included; never more handler calls at once than `concurrency`; a key waiting for its retry
 * holds no slot (the other keys run meanwhile, even at `concurrency` 1).
 */
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { Redis } from 'ioredis';
import { partitionOf, StreamHandler, StreamProducer, type StreamMessage } from '../../lib';
import { CaptureLogger, createEchoStreamApp } from '../faults/support/nest-app';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

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

let n = 0;
const fresh = () => `limits-${process.pid}-${++n}`;

/** One handler call: its key, sequence, attempt, and when it started and ended. */
interface Call {
  key: string;
  seq: number;
  attempts: number;
  startedAt: number;
  endedAt?: number;
}

/**
 * An app whose handler on `stream` (one partition: one loop, so its limits are the handler's)
 * records its calls, takes `handleMs`, and fails the first attempt of the entries `fails` picks.
 */
async function startApp(
  stream: string,
  options: Record<string, unknown>,
  handleMs: number,
  fails: (m: StreamMessage<{ seq: number }>) => boolean,
  { consumerName = 'a', calls = [] as Call[] } = {},
): Promise<{ calls: Call[]; most: () => number; producer: StreamProducer }> {
  let running = 0;
  let most = 0;
  @Injectable()
  class Handler {
    @StreamHandler(stream, 'g', { partitions: 1, maxDeliveries: 5, ...options })
    async handle(m: StreamMessage<{ seq: number }>): Promise<void> {
      const call: Call = {
        key: m.key ?? '?',
        seq: m.payload.seq,
        attempts: m.attempts,
        startedAt: Date.now(),
      };
      calls.push(call);
      most = Math.max(most, ++running);
      try {
        await sleep(handleMs);
        if (m.attempts === 1 && fails(m)) throw new Error(`planned failure of ${m.key}`);
      } finally {
        running--;
        call.endedAt = Date.now();
      }
    }
  }
  @Module({ providers: [Handler] })
  class HandlerModule {}
  const app = await createEchoStreamApp(
    { connection: server.url, consumerName, shutdownTimeoutMs: 3000 },
    HandlerModule,
    new CaptureLogger(),
  );
  apps.push(app);
  await app.init();
  return { calls, most: () => most, producer: app.get(StreamProducer) };
}

/** Starts per fixed window of `perMs` on the clock, as the limiter counts them. */
function perWindow(starts: number[], perMs: number): number[] {
  const counts = new Map<number, number>();
  for (const at of starts)
    counts.set(Math.floor(at / perMs), (counts.get(Math.floor(at / perMs)) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => a[0] - b[0]).map(([, c]) => c);
}

describe("a held key's retries", () => {
  it('count in rateLimit: no window sees more than max starts, retries included', async () => {
    const stream = fresh();
    const { calls, producer } = await startApp(
      stream,
      {
        rateLimit: { max: 4, perMs: 400 },
        concurrency: 8,
        retry: { type: 'fixed', delayMs: 20 },
      },
      2,
      () => true,
    );
    // 12 keys, one entry each: every first attempt fails and its key is held for a 20 ms retry
    for (let k = 0; k < 12; k++) await producer.publish(stream, { seq: 0 }, { key: `k${k}` });
    await waitFor(() => calls.filter((c) => c.endedAt !== undefined).length === 24, {
      timeoutMs: 15_000,
      message: '12 entries x 2 attempts',
    });
    const retries = calls.filter((c) => c.attempts === 2);
    expect(retries).toHaveLength(12);
    const windows = perWindow(
      calls.map((c) => c.startedAt),
      400,
    );
    process.stdout.write(
      `rateLimit 4 per 400 ms, 12 held keys: starts per window (retries included) ${windows.join(', ')}\n`,
    );
    expect(Math.max(...windows)).toBeLessThanOrEqual(4);
    expect(windows.length).toBeGreaterThanOrEqual(6); // 24 starts at 4 per window
  });

  it('give back the starts of the entries parked behind them: the other keys run at the full rate meanwhile', async () => {
    const stream = fresh();
    const { calls, producer } = await startApp(
      stream,
      {
        rateLimit: { max: 10, perMs: 250 },
        concurrency: 8,
        retry: { type: 'fixed', delayMs: 3000 },
      },
      1,
      (m) => m.key === 'a',
    );
    await producer.publish(stream, { seq: 0 }, { key: 'a' });
    await waitFor(() => calls.some((c) => c.key === 'a' && c.endedAt !== undefined), {
      message: "a's first attempt",
    });
    // 80 entries of the held key a (parked behind its retry) between 80 of ten other keys: each
    // read's starts of a's entries are given back and taken by the next read of the same window
    await Promise.all(
      Array.from({ length: 160 }, (_, i) =>
        producer.publish(stream, { seq: i }, { key: i % 2 === 0 ? 'a' : `b${i % 10}` }),
      ),
    );
    await waitFor(() => calls.some((c) => c.key === 'a' && c.attempts === 2), {
      timeoutMs: 10_000,
      message: "a's retry",
    });
    const retryAt = calls.find((c) => c.key === 'a' && c.attempts === 2)!.startedAt;
    const before = calls.filter((c) => c.key.startsWith('b') && c.startedAt < retryAt).length;
    process.stdout.write(
      `rateLimit 10 per 250 ms, key a held 3 s: ${before} of 80 other entries started before its retry\n`,
    );
    // 80 starts take 8 windows (2 s) at the full rate; starts lost with a's entries would halve it
    expect(before).toBe(80);
  });

  it('count in concurrency: never more handler calls at once than concurrency, retries included', async () => {
    const stream = fresh();
    const { calls, most, producer } = await startApp(
      stream,
      { concurrency: 2, retry: { type: 'fixed', delayMs: 30 } },
      60,
      () => true,
    );
    for (let k = 0; k < 8; k++) await producer.publish(stream, { seq: 0 }, { key: `k${k}` });
    await waitFor(() => calls.filter((c) => c.endedAt !== undefined).length === 16, {
      timeoutMs: 15_000,
      message: '8 entries x 2 attempts',
    });
    process.stdout.write(`concurrency 2, 8 held keys: at most ${most()} handler calls at once\n`);
    expect(most()).toBeLessThanOrEqual(2);
    expect(most()).toBe(2); // the slots were used, not one at a time
  });

  it('hold no slot while they wait: at concurrency 1 the other keys run during the delay', async () => {
    const stream = fresh();
    const { calls, most, producer } = await startApp(
      stream,
      { concurrency: 1, retry: { type: 'fixed', delayMs: 600 }, claimIntervalMs: 200 },
      5,
      (m) => m.key === 'a',
    );
    await producer.publish(stream, { seq: 0 }, { key: 'a' });
    await waitFor(() => calls.some((c) => c.key === 'a' && c.endedAt !== undefined), {
      message: "a's first attempt",
    });
    for (let seq = 0; seq < 5; seq++) await producer.publish(stream, { seq }, { key: 'b' });
    await waitFor(() => calls.filter((c) => c.endedAt !== undefined).length === 7, {
      timeoutMs: 10_000,
      message: "a's two attempts and b's five entries",
    });
    const retry = calls.find((c) => c.key === 'a' && c.attempts === 2)!;
    const b = calls.filter((c) => c.key === 'b');
    expect(b.map((c) => c.seq)).toEqual([0, 1, 2, 3, 4]);
    expect(Math.max(...b.map((c) => c.endedAt!))).toBeLessThan(retry.startedAt);
    expect(most()).toBe(1);
  });
});

// A partitioned handler runs a loop per owned partition; its limits are still the handler's
// (docs/partitions.md "Order"): before, each partition loop had its own concurrency and rate
// limit, and `scope: 'group'` one budget per partition stream (8 partitions: 8 times the limit).
describe("a partitioned handler's limits are the handler's, whatever partitions it owns", () => {
  it('concurrency: never more handler calls at once in the process than concurrency', async () => {
    const stream = fresh();
    const { calls, most, producer } = await startApp(
      stream,
      { partitions: 8, concurrency: 2 },
      40,
      () => false,
    );
    for (let seq = 0; seq < 2; seq++)
      for (let k = 0; k < 16; k++) await producer.publish(stream, { seq }, { key: `k${k}` });
    await waitFor(() => calls.filter((c) => c.endedAt !== undefined).length === 32, {
      timeoutMs: 15_000,
      message: '16 keys x 2 entries over 8 partitions',
    });
    process.stdout.write(`8 partitions, concurrency 2: at most ${most()} handler calls at once\n`);
    expect(new Set(calls.map((c) => c.key)).size).toBe(16);
    expect(most()).toBeLessThanOrEqual(2);
    expect(most()).toBe(2);
  });

  it("rateLimit 'process': no window sees more than max starts over all partitions", async () => {
    const stream = fresh();
    const { calls, producer } = await startApp(
      stream,
      { partitions: 8, concurrency: 8, rateLimit: { max: 5, perMs: 500 } },
      1,
      () => false,
    );
    for (let k = 0; k < 20; k++) await producer.publish(stream, { seq: 0 }, { key: `k${k}` });
    await waitFor(() => calls.filter((c) => c.endedAt !== undefined).length === 20, {
      timeoutMs: 15_000,
      message: '20 keys over 8 partitions',
    });
    const windows = perWindow(
      calls.map((c) => c.startedAt),
      500,
    );
    process.stdout.write(
      `8 partitions, rateLimit 5 per 500 ms: starts per window ${windows.join(', ')}\n`,
    );
    expect(Math.max(...windows)).toBeLessThanOrEqual(5);
    expect(windows.length).toBeGreaterThanOrEqual(4);
  });

  it('rateLimit: the windows go to the partition that has entries, not to the empty ones', async () => {
    const stream = fresh();
    const calls: Call[] = [];
    const { producer } = await startApp(
      stream,
      { partitions: 8, concurrency: 8, rateLimit: { max: 6, perMs: 500 } },
      1,
      () => false,
      { calls },
    );
    await waitFor(
      async () => {
        const lease = await redis.hgetall(`{${stream}}:echo-leases:g`);
        return Array.from({ length: 8 }, (_, i) => lease[`o:${i}`]).every((o) => o === 'a');
      },
      { timeoutMs: 10_000, message: 'the 8 partitions owned' },
    );
    // 36 entries of four keys of partition 0: six windows' worth; the other 7 partitions empty
    const keys: string[] = [];
    for (let k = 0; keys.length < 4; k++) if (partitionOf(`k${k}`, 8) === 0) keys.push(`k${k}`);
    for (let i = 0; i < 36; i++) await producer.publish(stream, { seq: i }, { key: keys[i % 4] });
    // a read parked on an empty partition held the starts of its window: about one window in 8
    // reached partition 0 (36 entries took 23.5 s); at 6 per window they need 3 s
    await waitFor(() => calls.filter((c) => c.endedAt !== undefined).length === 36, {
      timeoutMs: 10_000,
      message: '36 entries of one partition at 6 per 500 ms',
    });
    const windows = perWindow(
      calls.map((c) => c.startedAt),
      500,
    );
    process.stdout.write(
      `one busy partition of 8, rateLimit 6 per 500 ms: ${windows.join(', ')}\n`,
    );
    expect(Math.max(...windows)).toBeLessThanOrEqual(6);
    for (const key of keys) {
      const seqs = calls.filter((c) => c.key === key).map((c) => c.seq);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    }
  });

  it("rateLimit 'group': two processes sharing the partitions stay within one budget", async () => {
    const stream = fresh();
    const calls: Call[] = [];
    const options = {
      partitions: 8,
      concurrency: 8,
      partitionLeaseMs: 1000,
      rateLimit: { max: 6, perMs: 500, scope: 'group' },
    };
    const { producer } = await startApp(stream, options, 1, () => false, { calls });
    await startApp(stream, options, 1, () => false, { consumerName: 'b', calls });
    // both own partitions before the entries come
    await waitFor(
      async () => {
        const lease = await redis.hgetall(`{${stream}}:echo-leases:g`);
        const owners = Array.from({ length: 8 }, (_, i) => lease[`o:${i}`]);
        return owners.includes('a') && owners.includes('b');
      },
      { timeoutMs: 10_000, message: 'the partitions split between a and b' },
    );
    for (let k = 0; k < 30; k++) await producer.publish(stream, { seq: 0 }, { key: `k${k}` });
    await waitFor(() => calls.filter((c) => c.endedAt !== undefined).length === 30, {
      timeoutMs: 20_000,
      message: '30 keys over 8 partitions, two processes',
    }).catch(async (err: unknown) => {
      // the one failure seen (Valkey 9.1, CI) left no trace: say where the entries are
      const partitions = await Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          const name = `${stream}:p:${i}`;
          const pending = (await redis.xpending(name, 'g').catch(() => ['-'])) as unknown[];
          return `p${i}: len ${await redis.xlen(name)}, pending ${String(pending[0])}`;
        }),
      );
      const lease = await redis.hgetall(`{${stream}}:echo-leases:g`);
      const done = new Set(calls.filter((c) => c.endedAt !== undefined).map((c) => c.key));
      const missing = Array.from({ length: 30 }, (_, k) => `k${k}`).filter((k) => !done.has(k));
      throw new Error(
        `${String(err)}; not handled: ${missing.join(', ')}; ${partitions.join('; ')}; leases ${JSON.stringify(lease)}`,
      );
    });
    const windows = perWindow(
      calls.map((c) => c.startedAt),
      500,
    );
    process.stdout.write(
      `2 processes, 8 partitions, group rateLimit 6 per 500 ms: starts per window ${windows.join(', ')}\n`,
    );
    expect(Math.max(...windows)).toBeLessThanOrEqual(6);
    expect(windows.length).toBeGreaterThanOrEqual(5);
  });
});
