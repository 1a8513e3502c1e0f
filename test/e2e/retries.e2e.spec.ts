/**
 * Retries with a backoff curve (docs/delivery.md), engine level, on a real redis-server. Invariants: the
 * SAME entry comes back with attempts n+1, never before its delay and at most 500 ms after it,
 * while other entries flow; no peer runs it early; final failures are dead-lettered at once;
 * nothing stays stuck pending.
 */
import { Redis } from 'ioredis';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { makeConsumer, type MemoryLogger, type TestConsumerOptions } from '../support/engine';
import { sleep, waitFor } from '../support/wait-for';
import type { StreamConsumer } from '../../lib/consumer/loop/stream-consumer';
import { NonRetryableError } from '../../lib/errors/non-retryable.error';
import type { RetryPolicy } from '../../lib/interfaces/delivery-control.interface';
import type { DeadLetterMessage } from '../../lib/interfaces/dead-letter-message.interface';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';

/** The contract's upper bound on lateness. */
const LATE_MS = 500;

let server: RedisServer;
let redis: Redis;
let n = 0;
const fresh = () => `retry-${process.pid}-${++n}`;
const running: Array<{ consumer: StreamConsumer; control: Redis }> = [];

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map(stopOne));
});
afterAll(async () => {
  await stopAllRedisServers();
});

async function stopOne(c: { consumer: StreamConsumer; control: Redis }): Promise<void> {
  await c.consumer.stop(2000);
  c.control.disconnect();
}

function start(opts: Omit<TestConsumerOptions, 'url'>): {
  consumer: StreamConsumer;
  logger: MemoryLogger;
} {
  const made = makeConsumer({ url: server.url, ...opts });
  running.push(made);
  made.consumer.start();
  return made;
}

async function stop(consumer: StreamConsumer): Promise<void> {
  const at = running.findIndex((c) => c.consumer === consumer);
  if (at >= 0) await stopOne(running.splice(at, 1)[0]);
}

async function publish(stream: string, id: string): Promise<string> {
  return String(await redis.xadd(stream, '*', 'id', id, 'data', JSON.stringify({ id })));
}

async function pendingCount(stream: string, group: string): Promise<number> {
  const summary = (await redis.xpending(stream, group)) as [number, ...unknown[]];
  return Number(summary[0]);
}

async function deadLetterMaps(stream: string): Promise<Array<Record<string, string>>> {
  return (await redis.xrange(stream, '-', '+')).map(([, flat]) => {
    const map: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) map[flat[i]] = flat[i + 1];
    return map;
  });
}

/** One handler call as the handler saw it. */
interface Call {
  id: string;
  entryId: string;
  attempts: number;
  startedAt: number;
  /** When it threw (undefined: it returned). */
  failedAt?: number;
}

/**
 * Runs `policy` on one entry that fails attempts 1..3 and succeeds on 4, while a neighbour is
 * published during each wait; returns the calls of the failing entry and of the neighbours.
 */
async function runCurve(policy: RetryPolicy): Promise<{ calls: Call[]; neighbours: Call[] }> {
  const stream = fresh();
  const calls: Call[] = [];
  const neighbours: Call[] = [];
  const { consumer } = start({
    stream,
    group: 'g',
    // a long BLOCK and a long minIdleMs: only the retry timer may bring the entry back
    options: { retry: policy, blockMs: 5000, minIdleMs: 60_000, maxDeliveries: 10 },
    handle: (m: StreamMessage<unknown>) => {
      const call: Call = {
        id: m.id,
        entryId: m.entryId,
        attempts: m.attempts,
        startedAt: Date.now(),
      };
      if (m.id !== 'flaky') return void neighbours.push(call);
      calls.push(call);
      if (m.attempts <= 3) {
        call.failedAt = Date.now();
        throw new Error(`fail ${m.attempts}`);
      }
    },
  });
  const entryId = await publish(stream, 'flaky');
  for (let k = 1; k <= 3; k++) {
    await waitFor(() => calls.length === k, { timeoutMs: 70_000, message: `attempt ${k}` });
    // other entries keep flowing while the retry waits
    await publish(stream, `neighbour-${k}`);
  }
  await waitFor(() => calls.length === 4, { timeoutMs: 70_000, message: 'attempt 4' });
  await waitFor(async () => (await pendingCount(stream, 'g')) === 0, { message: 'all acked' });
  // the PEL empties when Redis runs the XACK; the loop counts the ack when its reply is back,
  // which can be after the reply of the XPENDING above: wait for that reply, then check exactly
  await waitFor(() => consumer.snapshot().totalAcked >= 4, { message: 'ack replies counted' });
  expect(calls.map((c) => [c.entryId, c.id, c.attempts])).toEqual(
    [1, 2, 3, 4].map((a) => [entryId, 'flaky', a]),
  );
  expect(consumer.snapshot()).toMatchObject({
    totalRetries: 3,
    retrying: 0,
    totalErrors: 3,
    totalAcked: 4,
    totalDlq: 0,
  });
  return { calls, neighbours };
}

/** Asserts attempt n+1 started not before `delays[n-1]` after the failure of n, and at most 500 ms late. */
function expectOnTime(calls: Call[], delays: number[]): void {
  const late: number[] = [];
  for (let k = 0; k < delays.length; k++) {
    const waited = calls[k + 1].startedAt - calls[k].failedAt!;
    expect(waited).toBeGreaterThanOrEqual(delays[k]);
    expect(waited).toBeLessThanOrEqual(delays[k] + LATE_MS);
    late.push(waited - delays[k]);
  }
  console.log(`retry lateness (ms) per attempt: ${late.join(', ')}`);
}

describe('retry timing', () => {
  it('fixed: attempts 2..4 come after delayMs (not before, at most 500 ms after); neighbours flow meanwhile', async () => {
    const { calls, neighbours } = await runCurve({ type: 'fixed', delayMs: 700 });
    expectOnTime(calls, [700, 700, 700]);
    // each neighbour was handled while the retry waited, not after it
    for (let k = 0; k < 3; k++) {
      expect(neighbours[k].startedAt).toBeGreaterThan(calls[k].failedAt!);
      expect(neighbours[k].startedAt).toBeLessThan(calls[k + 1].startedAt);
    }
  });

  it('exponential: 300, 600, 1200 ms for initialMs 300, factor 2', async () => {
    const { calls } = await runCurve({ type: 'exponential', initialMs: 300, factor: 2 });
    expectOnTime(calls, [300, 600, 1200]);
  });

  it('custom: receives the failed attempt, the thrown error and the message; its value is the delay', async () => {
    const seen: Array<[number, string, string]> = [];
    const { calls } = await runCurve({
      type: 'custom',
      delayMs: (attempt, error, message) => {
        seen.push([attempt, (error as Error).message, message.id]);
        return attempt * 250;
      },
    });
    expect(seen).toEqual([
      [1, 'fail 1', 'flaky'],
      [2, 'fail 2', 'flaky'],
      [3, 'fail 3', 'flaky'],
    ]);
    expectOnTime(calls, [250, 500, 750]);
  });

  it('a waiting retry takes no concurrency slot: 20 entries behind it are handled before it is due', async () => {
    const stream = fresh();
    const order: string[] = [];
    start({
      stream,
      group: 'g',
      options: { retry: { type: 'fixed', delayMs: 1500 }, minIdleMs: 60_000 },
      handle: (m) => {
        order.push(`${m.id}#${m.attempts}`);
        if (m.id === 'first' && m.attempts === 1) throw new Error('once');
      },
    });
    await publish(stream, 'first');
    await waitFor(() => order.length === 1);
    for (let i = 0; i < 20; i++) await publish(stream, `e${i}`);
    await waitFor(() => order.length === 22, { message: 'the retry and the 20' });
    expect(order[0]).toBe('first#1');
    expect(order[21]).toBe('first#2');
  });
});

describe('peers and minIdleMs', () => {
  it('a peer with a short minIdleMs never runs a retry before it is due (delay 2.5 x minIdleMs)', async () => {
    const stream = fresh();
    const calls: Array<Call & { by: string }> = [];
    const handle = (by: string) => (m: StreamMessage<unknown>) => {
      const call = {
        id: m.id,
        entryId: m.entryId,
        attempts: m.attempts,
        startedAt: Date.now(),
        by,
      } as Call & { by: string };
      calls.push(call);
      if (m.attempts === 1) {
        call.failedAt = Date.now();
        throw new Error('first attempt fails');
      }
    };
    const options = {
      retry: { type: 'fixed', delayMs: 1000 } as RetryPolicy,
      minIdleMs: 400,
      claimIntervalMs: 20,
    };
    start({ stream, group: 'g', consumer: 'a', options, handle: handle('a') });
    await publish(stream, 'x');
    await waitFor(() => calls.length === 1);
    // the peer sweeps every 20 ms for entries idle >= 400 ms, for the whole wait
    start({ stream, group: 'g', consumer: 'b', options, handle: handle('b') });
    await waitFor(() => calls.length === 2, { timeoutMs: 5000, message: 'the retry' });
    await sleep(300);
    expect(calls.map((c) => [c.by, c.attempts])).toEqual([
      ['a', 1],
      ['a', 2],
    ]);
    const waited = calls[1].startedAt - calls[0].failedAt!;
    expect(waited).toBeGreaterThanOrEqual(1000);
    expect(waited).toBeLessThanOrEqual(1000 + LATE_MS);
    expect(await pendingCount(stream, 'g')).toBe(0);
  });

  it('a batch longer than minIdleMs: a peer takes none of its entries, finished or failed, while the consumer lives', async () => {
    const stream = fresh();
    const calls: Array<Call & { by: string }> = [];
    const handle = (by: string) => async (m: StreamMessage<unknown>) => {
      const call = {
        id: m.id,
        entryId: m.entryId,
        attempts: m.attempts,
        startedAt: Date.now(),
        by,
      };
      calls.push(call);
      await sleep(200); // 6 x 200 ms: the batch outlasts minIdleMs (500 ms) twice over
      if (m.id === 'e0' && m.attempts === 1) {
        (call as Call).failedAt = Date.now();
        throw new Error('the first one fails');
      }
    };
    const options = {
      retry: { type: 'fixed', delayMs: 1500 } as RetryPolicy,
      minIdleMs: 500,
      claimIntervalMs: 20,
    };
    const a = start({ stream, group: 'g', consumer: 'a', options, handle: handle('a') });
    // the peer sweeps every 20 ms for entries idle >= 500 ms from the start
    start({ stream, group: 'g', consumer: 'b', options, handle: handle('b') });
    await sleep(300); // both parked
    const pipeline = redis.multi(); // one read: a or b takes all six
    for (let i = 0; i < 6; i++) pipeline.xadd(stream, '*', 'id', `e${i}`, 'data', '{}');
    await pipeline.exec();
    await waitFor(() => calls.some((c) => c.id === 'e0' && c.attempts === 2), {
      timeoutMs: 6000,
      message: 'the retry of e0',
    });
    await waitFor(async () => (await pendingCount(stream, 'g')) === 0, { message: 'all acked' });
    // whoever read the batch handled all of it: e0 twice (its retry on time), the rest once
    const holder = calls[0].by;
    expect(calls.map((c) => [c.by, c.id, c.attempts])).toEqual([
      ...[0, 1, 2, 3, 4, 5].map((i) => [holder, `e${i}`, 1]),
      [holder, 'e0', 2],
    ]);
    const waited = calls[6].startedAt - calls[0].failedAt!;
    expect(waited).toBeGreaterThanOrEqual(1500);
    expect(waited).toBeLessThanOrEqual(1500 + LATE_MS);
    expect(a.consumer.snapshot().totalErrors).toBe(holder === 'a' ? 1 : 0);
  });

  it('retry: false keeps the crash path: the entry comes back only after minIdleMs', async () => {
    const stream = fresh();
    const calls: Call[] = [];
    const { consumer } = start({
      stream,
      group: 'g',
      options: { retry: false, minIdleMs: 800, claimIntervalMs: 50 },
      handle: (m) => {
        const call: Call = {
          id: m.id,
          entryId: m.entryId,
          attempts: m.attempts,
          startedAt: Date.now(),
        };
        calls.push(call);
        if (m.attempts === 1) {
          call.failedAt = Date.now();
          throw new Error('once');
        }
      },
    });
    await publish(stream, 'x');
    await waitFor(() => calls.length === 2, { message: 'the reclaim' });
    expect(calls[1].startedAt - calls[0].failedAt!).toBeGreaterThanOrEqual(700);
    expect(consumer.snapshot()).toMatchObject({ totalRetries: 0, retrying: 0 });
  });

  it('at stop, waiting retries are released: a peer handles them when due, nothing stays pending', async () => {
    const stream = fresh();
    const calls: Array<Call & { by: string }> = [];
    const options = {
      retry: { type: 'fixed', delayMs: 600 } as RetryPolicy,
      minIdleMs: 1000,
      claimIntervalMs: 20,
    };
    const handle = (by: string) => (m: StreamMessage<unknown>) => {
      const call = {
        id: m.id,
        entryId: m.entryId,
        attempts: m.attempts,
        startedAt: Date.now(),
        by,
      };
      calls.push(call);
      if (by === 'a') {
        (call as Call).failedAt = Date.now();
        throw new Error('a fails');
      }
    };
    const a = start({ stream, group: 'g', consumer: 'a', options, handle: handle('a') });
    for (let i = 0; i < 5; i++) await publish(stream, `x${i}`);
    await waitFor(() => a.consumer.snapshot().retrying === 5, { message: 'five waiting retries' });
    const lastFailure = Math.max(...calls.map((c) => c.failedAt ?? 0));
    await stop(a.consumer);
    expect(a.logger.has(/released 5 waiting retries to peers/)).toBe(true);
    start({ stream, group: 'g', consumer: 'b', options, handle: handle('b') });
    await waitFor(() => calls.filter((c) => c.by === 'b').length === 5, {
      message: 'the peer handles the five',
    });
    const byB = calls.filter((c) => c.by === 'b');
    expect(byB.every((c) => c.attempts === 2)).toBe(true);
    // released with an idle time that makes them due for the peer when due for us (well before
    // minIdleMs after the stop); 10 ms for the clocks of Redis and Node
    expect(Math.min(...byB.map((c) => c.startedAt))).toBeGreaterThanOrEqual(
      Math.min(...calls.filter((c) => c.failedAt).map((c) => c.failedAt!)) + 600 - 10,
    );
    expect(Math.max(...byB.map((c) => c.startedAt))).toBeLessThan(lastFailure + 1000);
    await waitFor(async () => (await pendingCount(stream, 'g')) === 0);
  });
});

describe('final failures', () => {
  it('NonRetryableError (and any error named so) goes to the dead-letter path at once, reason non_retryable', async () => {
    const stream = fresh();
    const letters: DeadLetterMessage[] = [];
    const calls: string[] = [];
    const { consumer } = start({
      stream,
      group: 'g',
      options: { retry: { type: 'fixed', delayMs: 100 }, minIdleMs: 60_000 },
      handle: (m) => {
        calls.push(m.id);
        if (m.id === 'own') throw new NonRetryableError('card declined for good');
        if (m.id === 'foreign')
          throw Object.assign(new Error('foreign copy'), { name: 'NonRetryableError' });
      },
      deadLetters: [(letter) => void letters.push(letter)],
    });
    const own = await publish(stream, 'own');
    const foreign = await publish(stream, 'foreign');
    await publish(stream, 'fine');
    await waitFor(async () => (await redis.xlen(`${stream}:dlq`)) === 2, { timeoutMs: 3000 });
    await waitFor(async () => (await pendingCount(stream, 'g')) === 0);
    await sleep(300);
    expect(calls).toEqual(['own', 'foreign', 'fine']); // never retried
    const maps = await deadLetterMaps(`${stream}:dlq`);
    expect(maps.map((m) => [m.dlq_entry_id, m.dlq_reason, m.dlq_error, m.dlq_attempts])).toEqual([
      [own, 'non_retryable', 'card declined for good', '1'],
      [foreign, 'non_retryable', 'foreign copy', '1'],
    ]);
    expect(letters.map((l) => [l.reason, l.id])).toEqual([
      ['non_retryable', 'own'],
      ['non_retryable', 'foreign'],
    ]);
    expect(consumer.snapshot()).toMatchObject({ totalDlq: 2, totalRetries: 0, totalAcked: 1 });
  });

  it('a failure on the last allowed delivery dead-letters at once, without waiting for the sweep', async () => {
    const stream = fresh();
    const attempts: number[] = [];
    start({
      stream,
      group: 'g',
      // no sweep for a minute: only the immediate path can dead-letter it
      options: {
        retry: { type: 'fixed', delayMs: 100 },
        maxDeliveries: 3,
        minIdleMs: 60_000,
        claimIntervalMs: 60_000,
      },
      handle: (m) => {
        attempts.push(m.attempts);
        throw new Error(`boom ${m.attempts}`);
      },
    });
    const entryId = await publish(stream, 'pill');
    await waitFor(async () => (await redis.xlen(`${stream}:dlq`)) === 1, { timeoutMs: 3000 });
    expect(attempts).toEqual([1, 2, 3]);
    const [letter] = await deadLetterMaps(`${stream}:dlq`);
    expect(letter).toMatchObject({
      dlq_entry_id: entryId,
      dlq_reason: 'max_deliveries',
      dlq_attempts: '3',
      dlq_error: 'boom 3',
    });
    expect(await pendingCount(stream, 'g')).toBe(0);
  });
});

describe('batch mode', () => {
  it('entries not returned for ack are retried one by one under the policy; returned ones are acked', async () => {
    const stream = fresh();
    const batches: Array<Array<[string, number, number]>> = [];
    start({
      stream,
      group: 'g',
      batchHandle: (ms: StreamMessage<unknown>[]) => {
        batches.push(ms.map((m) => [m.id, m.attempts, Date.now()]));
        // odd ids fail on their first delivery
        return ms.filter((m) => m.attempts > 1 || Number(m.id.slice(1)) % 2 === 0);
      },
      options: { batch: true, retry: { type: 'fixed', delayMs: 400 }, minIdleMs: 60_000 },
    });
    const pipeline = redis.multi();
    for (let i = 0; i < 6; i++) pipeline.xadd(stream, '*', 'id', `b${i}`, 'data', '{}');
    await pipeline.exec();
    await waitFor(async () => (await pendingCount(stream, 'g')) === 0 && batches.length >= 2, {
      message: 'all acked',
    });
    expect(batches[0].map(([id, a]) => [id, a])).toEqual(
      [0, 1, 2, 3, 4, 5].map((i) => [`b${i}`, 1]),
    );
    const retried = batches.slice(1).flat();
    expect(retried.map(([id, a]) => [id, a]).sort()).toEqual([
      ['b1', 2],
      ['b3', 2],
      ['b5', 2],
    ]);
    const firstAt = batches[0][0][2];
    for (const [, , at] of retried) {
      expect(at - firstAt).toBeGreaterThanOrEqual(400);
      expect(at - firstAt).toBeLessThanOrEqual(400 + LATE_MS);
    }
  });

  it('NonRetryableError from a batch handler dead-letters every entry of the batch at once', async () => {
    const stream = fresh();
    let calls = 0;
    start({
      stream,
      group: 'g',
      batchHandle: () => {
        calls++;
        throw new NonRetryableError('schema v1 is gone');
      },
      options: { batch: true, retry: { type: 'fixed', delayMs: 100 }, minIdleMs: 60_000 },
    });
    const pipeline = redis.multi();
    for (let i = 0; i < 3; i++) pipeline.xadd(stream, '*', 'id', `n${i}`, 'data', '{}');
    await pipeline.exec();
    await waitFor(async () => (await redis.xlen(`${stream}:dlq`)) === 3, { timeoutMs: 3000 });
    await sleep(300);
    expect(calls).toBe(1);
    const maps = await deadLetterMaps(`${stream}:dlq`);
    expect(maps.map((m) => [m.id, m.dlq_reason, m.dlq_error])).toEqual(
      [0, 1, 2].map((i) => [`n${i}`, 'non_retryable', 'schema v1 is gone']),
    );
    expect(await pendingCount(stream, 'g')).toBe(0);
  });
});

describe('bad input', () => {
  it.each([
    ['NaN', () => Number.NaN],
    ['a negative number', () => -1],
    [
      'a throw',
      () => {
        throw new Error('policy bug');
      },
    ],
  ])(
    'a custom policy returning %s is logged, 1000 ms is used, and nothing is stuck',
    async (_, fn) => {
      const stream = fresh();
      const calls: Call[] = [];
      const { logger } = start({
        stream,
        group: 'g',
        options: { retry: { type: 'custom', delayMs: fn }, minIdleMs: 60_000 },
        handle: (m) => {
          const call: Call = {
            id: m.id,
            entryId: m.entryId,
            attempts: m.attempts,
            startedAt: Date.now(),
          };
          calls.push(call);
          if (m.attempts === 1) {
            call.failedAt = Date.now();
            throw new Error('once');
          }
        },
      });
      const entryId = await publish(stream, 'x');
      await waitFor(() => calls.length === 2, { timeoutMs: 5000 });
      const waited = calls[1].startedAt - calls[0].failedAt!;
      expect(waited).toBeGreaterThanOrEqual(1000);
      expect(waited).toBeLessThanOrEqual(1000 + LATE_MS);
      expect(
        logger.has(new RegExp(`custom retry policy failed for entry ${entryId} .*1000 ms`)),
      ).toBe(true);
      await waitFor(async () => (await pendingCount(stream, 'g')) === 0);
    },
  );
});
