/**
 * `deleteOnAck` (docs/delivery.md "Deleting acknowledged entries") and the newer server verbs
 * behind it (docs/compatibility.md "Server features") on a real server: `true` empties a work
 * queue as it goes, dead letters included; `'acked-by-all'` keeps every entry a group still needs
 * and removes it within 5 s of the last group's acknowledgement; a group added later turns `true`
 * into `'acked-by-all'`; what bootstrap refuses. Under `npm run test:servers` the same specs run
 * on Redis 8.6, where the acks are XACKDEL (INFO commandstats tells which path ran) unless
 * `serverFeatures: 'baseline'`.
 */
import 'reflect-metadata';
import { Injectable, Module, type INestApplication, type Type } from '@nestjs/common';
import type { Redis } from 'ioredis';
import {
  ConsumerStats,
  StreamArchive,
  StreamHandler,
  StreamProducer,
  type EchoStreamModuleOptions,
  type StreamMessage,
  type StreamHandlerOptions,
} from '../../lib';
import { chosenServer } from '../../scripts/lib/echo-server.mjs';
import { startedConsumers } from '../support/engine';
import { CaptureLogger, createEchoStreamApp } from '../faults/support/nest-app';
import { commandCalls, RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

let server: RedisServer;
let redis: Redis;
let seq = 0;
const fresh = (): string => `doa-${process.pid}-${++seq}`;
const consumers = startedConsumers(() => server.url);
const apps = new Set<INestApplication>();
/** Redis 8.6 answers the newer verbs; every other build of the matrix takes the Redis 7 path. */
const NATIVE = chosenServer() === 'redis86';

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterEach(async () => {
  await consumers.stopAll();
  await Promise.all([...apps].map((app) => app.close()));
  apps.clear();
});
afterAll(async () => {
  await stopAllRedisServers();
});

async function publish(stream: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++)
    ids.push((await redis.xadd(stream, '*', 'id', `e-${i}`, 'data', JSON.stringify({ i })))!);
  return ids;
}

async function pending(stream: string, group: string): Promise<number> {
  return Number(((await redis.xpending(stream, group)) as [number])[0]);
}

/** Calls of `command` the test server served so far. */
const calls = (command: string): Promise<number> => commandCalls(redis, command);

describe('deleteOnAck: true', () => {
  it('removes each entry with its acknowledgement: the stream ends empty, a dead letter too (its copy in the dead-letter stream)', async () => {
    const stream = fresh();
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const ids = await publish(stream, 30);
    const poison = ids[7];
    const handled = new Set<string>();
    consumers.start({
      stream,
      group: 'g',
      options: { deleteOnAck: true, maxDeliveries: 2, retry: { type: 'fixed', delayMs: 50 } },
      handle: (m) => {
        if (m.entryId === poison) throw new Error('poison');
        handled.add(m.entryId);
      },
    });
    await waitFor(async () => (await redis.xlen(stream)) === 0, {
      timeoutMs: 10_000,
      message: 'the stream emptied',
    });
    expect(handled.size).toBe(29);
    expect(await pending(stream, 'g')).toBe(0);
    const letters = await redis.xrange(`${stream}:dlq`, '-', '+');
    expect(letters).toHaveLength(1);
    expect(letters[0][1]).toEqual(expect.arrayContaining(['dlq_entry_id', poison]));
  });

  it(`acknowledges with ${NATIVE ? 'XACKDEL on this server' : 'XACK + XDEL on this server'}, and with XACK + XDEL under serverFeatures: 'baseline'`, async () => {
    for (const serverFeatures of ['auto', 'baseline'] as const) {
      const stream = fresh();
      await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
      await redis.config('RESETSTAT');
      consumers.start({ stream, group: 'g', options: { deleteOnAck: true }, serverFeatures });
      // two waves: the first look at start asks the server before these acks
      for (let wave = 0; wave < 2; wave++) {
        await publish(stream, 10);
        await waitFor(async () => (await redis.xlen(stream)) === 0, { message: 'emptied' });
      }
      const native = NATIVE && serverFeatures === 'auto';
      expect({ serverFeatures, xackdel: (await calls('xackdel')) > 0 }).toEqual({
        serverFeatures,
        xackdel: native,
      });
      expect({ serverFeatures, xdel: (await calls('xdel')) > 0 }).toEqual({
        serverFeatures,
        xdel: !native,
      });
      await consumers.stopAll();
    }
  });

  it('with exactlyOnce: not with the commit (a fenced one must leave its entry to its new owner) but by the sweep, after the outputs are written', async () => {
    const stream = fresh();
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    await publish(stream, 12);
    const counters = new Set<string>();
    consumers.start({
      stream,
      group: 'g',
      options: { deleteOnAck: true, exactlyOnce: true },
      handle: (m) => {
        counters.add(`${m.tx.slotTag}:count`);
        m.tx.incrBy(`${m.tx.slotTag}:count`, 1);
      },
    });
    await waitFor(async () => (await redis.xlen(stream)) === 0, {
      timeoutMs: 8000,
      message: 'emptied by the sweep',
    });
    expect(counters.size).toBe(1);
    expect(await redis.get([...counters][0])).toBe('12');
    expect(await pending(stream, 'g')).toBe(0);
  });

  it("a group added later turns it into 'acked-by-all' (a warning): its entries wait for that group", async () => {
    const stream = fresh();
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const { logger } = consumers.start({ stream, group: 'g', options: { deleteOnAck: true } });
    await publish(stream, 5);
    await waitFor(async () => (await redis.xlen(stream)) === 0, { message: 'emptied' });
    await redis.xgroup('CREATE', stream, 'late', '$');
    await waitFor(() => logger.has(/warn .*deleteOnAck is true but .* now has 2 groups/), {
      timeoutMs: 6000,
      message: 'the warning',
    });
    await publish(stream, 10);
    await waitFor(
      async () => (await pending(stream, 'g')) === 0 && (await redis.xlen(stream)) > 0,
      {
        message: 'g acked',
      },
    );
    await sleep(2500); // a sweep ran meanwhile
    expect(await redis.xlen(stream)).toBe(10);
    // `late` reads and acks them: g's sweep removes them
    const read = (await redis.xreadgroup('GROUP', 'late', 'w', 'STREAMS', stream, '>')) as Array<
      [string, Array<[string, string[]]>]
    >;
    await redis.xack(stream, 'late', ...read[0][1].map(([id]) => id));
    await waitFor(async () => (await redis.xlen(stream)) === 0, {
      timeoutMs: 8000,
      message: 'removed after the last ack',
    });
  });
});

describe("deleteOnAck: 'acked-by-all'", () => {
  it('keeps what another group has yet to read or holds, and removes it within 5 s of that group acknowledging it', async () => {
    const stream = fresh();
    await redis.xgroup('CREATE', stream, 'a', '0', 'MKSTREAM');
    await redis.xgroup('CREATE', stream, 'b', '0');
    const handledByA = new Set<string>();
    consumers.start({
      stream,
      group: 'a',
      options: { deleteOnAck: 'acked-by-all' },
      handle: (m) => void handledByA.add(m.entryId),
    });
    const ids = await publish(stream, 20);
    await waitFor(async () => handledByA.size === 20 && (await pending(stream, 'a')) === 0, {
      message: 'a acked all',
    });
    // b holds 5 of them, has yet to read the rest: nothing goes
    await redis.xreadgroup('GROUP', 'b', 'w', 'COUNT', 5, 'STREAMS', stream, '>');
    await sleep(2500);
    expect(await redis.xlen(stream)).toBe(20);
    // b acks its 5 (it does not delete): a's sweep removes them, the 15 stay
    const ackedAt = Date.now();
    await redis.xack(stream, 'b', ...ids.slice(0, 5));
    await waitFor(async () => (await redis.xlen(stream)) === 15, {
      timeoutMs: 10_000,
      message: 'the 5 removed',
    });
    expect(Date.now() - ackedAt).toBeLessThan(5000 + 1000);
    const left = (await redis.xrange(stream, '-', '+')).map(([id]) => id);
    expect(left).toEqual(ids.slice(5));
  });

  it('with both groups deleting, the last acknowledgement removes the entry', async () => {
    const stream = fresh();
    await redis.xgroup('CREATE', stream, 'a', '0', 'MKSTREAM');
    await redis.xgroup('CREATE', stream, 'b', '0');
    const options: Partial<StreamHandlerOptions> = { deleteOnAck: 'acked-by-all' };
    consumers.start({ stream, group: 'a', options });
    await publish(stream, 20);
    await waitFor(
      async () => (await pending(stream, 'a')) === 0 && (await redis.xlen(stream)) === 20,
      {
        message: 'a acked, all kept for b',
      },
    );
    consumers.start({ stream, group: 'b', options, consumer: 'other' });
    await waitFor(async () => (await redis.xlen(stream)) === 0, {
      timeoutMs: 8000,
      message: "removed with b's acks",
    });
    expect(await pending(stream, 'b')).toBe(0);
  });
});

describe('deleteOnAck on a partitioned stream', () => {
  it('true empties every partition as its entries are acked, in key order', async () => {
    const stream = fresh();
    const seen = new Map<string, number[]>();
    @Injectable()
    class Ledger {
      @StreamHandler(stream, 'g', { partitions: 4, deleteOnAck: true, concurrency: 4 })
      apply(m: StreamMessage<{ n: number }>): void {
        seen.set(m.key!, [...(seen.get(m.key!) ?? []), m.payload.n]);
      }
    }
    const app = await boot([Ledger], { producer: { partitions: { [stream]: 4 } } });
    const producer = app.get(StreamProducer);
    for (let n = 0; n < 40; n++) await producer.publish(stream, { n }, { key: `k${n % 8}` });
    const partitions = [0, 1, 2, 3].map((i) => `${stream}:p:${i}`);
    await waitFor(
      async () => {
        const lengths = await Promise.all(partitions.map((p) => redis.xlen(p)));
        return lengths.every((length) => length === 0) && [...seen.values()].flat().length === 40;
      },
      { timeoutMs: 10_000, message: 'every partition emptied' },
    );
    for (const [key, ns] of seen)
      expect({ key, ns }).toEqual({ key, ns: [...ns].sort((a, b) => a - b) });
  });
});

/** A provider with a `@StreamHandler(stream, group, options)`. */
function handlerOn(stream: string, group: string, options: Partial<StreamHandlerOptions>): Type {
  @Injectable()
  class Handler {
    handle(): void {}
  }
  const descriptor = Object.getOwnPropertyDescriptor(Handler.prototype, 'handle')!;
  StreamHandler(stream, group, options)(Handler.prototype, 'handle', descriptor);
  return Handler;
}

/** An app with `providers`; its logger's lines kept. Closed after the test, booted or not. */
async function boot(
  providers: Type[],
  options: Partial<EchoStreamModuleOptions> = {},
  logger = new CaptureLogger(),
): Promise<INestApplication> {
  @Module({ providers })
  class Handlers {}
  const app = await createEchoStreamApp({ connection: server.url, ...options }, Handlers, logger);
  apps.add(app);
  await app.init();
  return app;
}

describe('what bootstrap refuses, and the server features it names', () => {
  it('true on a stream that has another group in Redis', async () => {
    const stream = fresh();
    await redis.xgroup('CREATE', stream, 'reporting', '0', 'MKSTREAM');
    await expect(boot([handlerOn(stream, 'g', { deleteOnAck: true })])).rejects.toThrow(
      `deleteOnAck: true on stream '${stream}', which also has group(s) 'reporting'`,
    );
    expect(await redis.xlen(stream)).toBe(0);
  });

  it('true beside another handler of the app on the stream as another group', async () => {
    const stream = fresh();
    await expect(
      boot([handlerOn(stream, 'g', { deleteOnAck: true }), handlerOn(stream, 'h', {})]),
    ).rejects.toThrow(`deleteOnAck: true on stream '${stream}', which Handler.handle consumes`);
  });

  it('either form with an archive handler of the stream', async () => {
    const stream = fresh();
    @Injectable()
    class Archive {
      @StreamArchive(stream)
      archive(): void {}
    }
    await expect(
      boot([handlerOn(stream, 'g', { deleteOnAck: 'acked-by-all' }), Archive], {
        retention: [{ stream, maxLen: 10 }],
      }),
    ).rejects.toThrow(`deleteOnAck on stream '${stream}' with the archive handler Archive.archive`);
  });

  it('a value that is neither', () => {
    expect(() => handlerOn(fresh(), 'g', { deleteOnAck: 'yes' as never })).toThrow(
      `option 'deleteOnAck' must be true, false or 'acked-by-all', got 'yes'`,
    );
  });

  it("ConsumerStats.serverFeatures(): what this server answers; none under 'baseline'", async () => {
    const logger = new CaptureLogger();
    const auto = await boot([handlerOn(fresh(), 'g', {})], {}, logger);
    expect(await auto.get(ConsumerStats).serverFeatures()).toEqual({
      mode: 'auto',
      available: NATIVE ? ['CLAIM', 'IDMP', 'XACKDEL'] : [],
      used: NATIVE ? ['CLAIM', 'IDMP', 'XACKDEL'] : [],
    });
    // and one line at start names them
    await waitFor(() => logger.has(/^log .*: Server features: /), { message: 'the line' });
    expect(logger.matching(/Server features: /)).toEqual([
      NATIVE
        ? 'log EchoStreamOrchestrator: Server features: CLAIM, IDMP, XACKDEL in use'
        : 'log EchoStreamOrchestrator: Server features: none in use',
    ]);
    const baseline = await boot([handlerOn(fresh(), 'g', {})], { serverFeatures: 'baseline' });
    expect(await baseline.get(ConsumerStats).serverFeatures()).toEqual({
      mode: 'baseline',
      available: [],
      used: [],
    });
  });
});
