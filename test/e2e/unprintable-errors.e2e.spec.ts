/**
 * Any value a handler throws or returns becomes a verdict for its entry alone (issue 10, defect 4):
 * a thrown value that cannot be printed (null prototype, cycle, a throwing getter) leaves only its
 * entry pending, and a batch handler returning something that is not an iterable of acks is a
 * failure of that batch's entries. Never a loop "Redis error", never a lost batch outcome.
 */
import { Redis } from 'ioredis';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { makeConsumer, type TestConsumerOptions } from '../support/engine';
import { sleep, waitFor } from '../support/wait-for';
import type { StreamConsumer } from '../../lib/consumer/loop/stream-consumer';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';

let server: RedisServer;
let redis: Redis;
let n = 0;
const fresh = () => `unprintable-${process.pid}-${++n}`;
const running: Array<{ consumer: StreamConsumer; control: Redis }> = [];

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterEach(async () => {
  for (const c of running.splice(0)) {
    await c.consumer.stop(2000);
    c.control.disconnect();
  }
});
afterAll(async () => {
  await stopAllRedisServers();
});

function start(opts: Omit<TestConsumerOptions, 'url'>) {
  const made = makeConsumer({ url: server.url, ...opts });
  running.push(made);
  made.consumer.start();
  return made;
}

async function publish(stream: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++)
    ids.push(String(await redis.xadd(stream, '*', 'id', `p-${i}`, 'data', JSON.stringify({ i }))));
  return ids;
}

async function pendingIds(stream: string, group: string): Promise<string[]> {
  const rows = (await redis.xpending(stream, group, '-', '+', 100)) as Array<[string]>;
  return rows.map((r) => r[0]);
}

/** Values no `String()` can print: each makes `String(value)` throw. */
function unprintables(): unknown[] {
  const cyclic = Object.create(null) as Record<string, unknown>;
  cyclic.self = cyclic;
  const bare = Object.create(null) as Record<string, unknown>;
  bare.code = 'E_BARE';
  const getter = new Error('unused');
  Object.defineProperty(getter, 'message', {
    get() {
      throw new Error('no message for you');
    },
  });
  const hostile = new Proxy(
    {},
    {
      get() {
        throw new Error('hostile get');
      },
      getPrototypeOf() {
        throw new Error('hostile prototype');
      },
      ownKeys() {
        throw new Error('hostile keys');
      },
    },
  );
  return [cyclic, bare, getter, hostile];
}

describe('a thrown value that cannot be printed', () => {
  it('leaves only its own entry pending; the others of the batch are acked; no Redis error', async () => {
    const stream = fresh();
    const thrown = unprintables();
    const ids = await publish(stream, 2 * thrown.length + 1);
    // every other entry throws one of the unprintable values
    const bad = new Map(thrown.map((value, i) => [ids[2 * i + 1], value]));
    const { consumer, logger } = start({
      stream,
      group: 'g',
      handle: (m: StreamMessage<unknown>) => {
        if (bad.has(m.entryId)) throw bad.get(m.entryId);
      },
    });
    await waitFor(() => consumer.snapshot().totalAcked >= ids.length - bad.size, {
      message: 'the good entries acked',
    });
    await sleep(300);
    expect((await pendingIds(stream, 'g')).sort()).toEqual([...bad.keys()].sort());
    expect(logger.has(/Redis error/)).toBe(false);
    expect(consumer.snapshot().totalErrors).toBe(bad.size);
    for (const entryId of bad.keys())
      expect(logger.has(new RegExp(`failed on entry ${entryId}.*left pending`))).toBe(true);
    expect(consumer.snapshot().state).toBe('running');
  });
});

describe('a batch handler returning something that is not an iterable of acks', () => {
  it('is a failure of that batch: its entries stay pending, the loop goes on, no Redis error', async () => {
    const stream = fresh();
    const ids = await publish(stream, 3);
    let calls = 0;
    const { consumer, logger } = start({
      stream,
      group: 'g',
      batchHandle: (batch: StreamMessage<unknown>[]) => {
        calls++;
        return batch.some((m) => ids.includes(m.entryId)) ? true : batch;
      },
    });
    await waitFor(() => calls >= 1, { message: 'the batch handler was called' });
    const later = await publish(stream, 2);
    await waitFor(() => consumer.snapshot().totalAcked >= later.length, {
      message: 'a later batch acked',
    });
    await sleep(300);
    expect((await pendingIds(stream, 'g')).sort()).toEqual([...ids].sort());
    expect(logger.has(/Redis error/)).toBe(false);
    expect(consumer.snapshot().totalErrors).toBe(1);
    expect(logger.has(/batch handler returned true/)).toBe(true);
  });
});
