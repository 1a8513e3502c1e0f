/**
 * Duplicates and stale replays skipped (docs/delivery.md "Duplicates and stale replays") against
 * a real server: with `dedup`, an entry whose branded id the group acked is acked without a
 * handler call (a foreign producer's duplicate); only acked entries count; off by default with
 * nothing asked of Redis. With `newerWins`, a re-claimed old entry of a key after a newer one is
 * acked without a handler call.
 */
import { Redis } from 'ioredis';
import { brandedId } from '../../lib';
import type { StreamConsumer } from '../../lib/consumer/loop/stream-consumer';
import { NonRetryableError } from '../../lib/errors/non-retryable.error';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import { makeConsumer, type MemoryLogger, type TestConsumerOptions } from '../support/engine';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

let server: RedisServer;
let redis: Redis;
let n = 0;
const fresh = () => `skip-${process.pid}-${++n}`;
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

function start(opts: Omit<TestConsumerOptions, 'url'>): {
  consumer: StreamConsumer;
  logger: MemoryLogger;
} {
  const made = makeConsumer({ url: server.url, ...opts });
  running.push(made);
  made.consumer.start();
  return made;
}

/** XADD by hand, as a foreign producer would: an `id` field and a JSON `data` field. */
async function xadd(stream: string, id: string, data: unknown): Promise<string> {
  return String(await redis.xadd(stream, '*', 'id', id, 'data', JSON.stringify(data)));
}

async function pendingCount(stream: string, group: string): Promise<number> {
  const summary = (await redis.xpending(stream, group)) as [number, ...unknown[]];
  return Number(summary[0]);
}

async function acked(stream: string, group: string, count: number): Promise<void> {
  await waitFor(
    async () => (await pendingCount(stream, group)) === 0 && (await redis.xlen(stream)) >= count,
    { message: `${count} entries of ${stream} acked` },
  );
}

describe('dedup', () => {
  it("a foreign producer's duplicate (same branded id, XADD by hand) is acked without a handler call", async () => {
    const stream = fresh();
    const seen: string[] = [];
    const { consumer, logger } = start({
      stream,
      group: 'g',
      options: { dedup: true },
      handle: (m) => void seen.push(m.entryId),
    });
    const first = await xadd(stream, 'order-1', { v: 1 });
    await waitFor(() => seen.length === 1);
    await acked(stream, 'g', 1);
    await sleep(300); // the ack (and its record) went out with the next read
    const duplicate = await xadd(stream, 'order-1', { v: 1 });
    const other = await xadd(stream, 'order-2', { v: 2 });
    await waitFor(() => seen.length === 2);
    await acked(stream, 'g', 3);
    expect(seen).toEqual([first, other]);
    expect(consumer.snapshot()).toMatchObject({ totalDuplicates: 1, totalStale: 0, totalAcked: 3 });
    expect(logger.has(new RegExp(`debug .*entry ${duplicate} skipped \\(duplicate\\)`))).toBe(true);
    const keys = await redis.keys(`{${stream}}:echo-dedup:*`);
    expect(keys.sort()).toEqual([
      `{${stream}}:echo-dedup::g:order-1`,
      `{${stream}}:echo-dedup::g:order-2`,
    ]);
    expect(await redis.pttl(keys[0])).toBeGreaterThan(590_000);
  });

  it('a record Redis refuses to write leaves its entry pending, never acked without it; once allowed, the ack and record land and a copy is skipped', async () => {
    // a user without SET: the ack script's record write is refused (as maxmemory would refuse it)
    const stream = fresh();
    await redis.acl('SETUSER', 'noset', 'reset', 'on', '>pw', '~*', '&*', '+@all', '-set');
    const seen: string[] = [];
    const url = `redis://noset:pw@127.0.0.1:${server.port}`;
    const made = makeConsumer({
      url,
      stream,
      group: 'g',
      options: { dedup: true, blockMs: 50 },
      handle: (m) => void seen.push(m.entryId),
    });
    running.push(made);
    made.consumer.start();
    const first = await xadd(stream, 'order-1', { v: 1 });
    await waitFor(() => seen.length === 1);
    // the ack goes out with the next reads and is refused each time: the entry stays pending
    await waitFor(() => made.logger.has(/error .*Redis error .*script/), {
      message: 'the refused ack logged',
    });
    await sleep(300);
    expect(await pendingCount(stream, 'g')).toBe(1);
    expect(await redis.exists(`{${stream}}:echo-dedup::g:order-1`)).toBe(0);
    await redis.acl('SETUSER', 'noset', '+set');
    await acked(stream, 'g', 1);
    expect(await redis.get(`{${stream}}:echo-dedup::g:order-1`)).toBe('order-1');
    await sleep(200);
    await xadd(stream, 'order-1', { v: 1 });
    const other = await xadd(stream, 'order-2', { v: 2 });
    await waitFor(() => seen.length === 2);
    await acked(stream, 'g', 3);
    expect(seen).toEqual([first, other]);
  });

  it('a backlog with each id published twice, the copy in the next read: every id runs once, also when a sweep settles the read sent ahead before the XACK of the batch before it', async () => {
    const stream = fresh();
    const batchSize = 10;
    const ids: string[] = [];
    // batches of 10 originals, each followed by a batch of their copies: the copies are read
    // ahead while their twins are in hand, and looked up before or with the twins' XACK
    for (let b = 0; b < 30; b++) {
      const batch = Array.from({ length: batchSize }, (_, i) => `order-${b}-${i}`);
      for (const id of batch) await xadd(stream, id, { id });
      for (const id of batch) await xadd(stream, id, { id, copy: true });
      ids.push(...batch);
    }
    const runs = new Map<string, number>();
    const { consumer } = start({
      stream,
      group: 'g',
      // a sweep due every few batches: the read sent ahead is then handled before the acks of
      // the batch before it go out (its look-up, made as it landed, found none of their records)
      options: { dedup: true, batchSize, claimIntervalMs: 20, minIdleMs: 10_000 },
      handle: async (m) => {
        runs.set(m.id, (runs.get(m.id) ?? 0) + 1);
        await sleep(1);
      },
    });
    await waitFor(() => consumer.snapshot().totalAcked === ids.length * 2, {
      timeoutMs: 30_000,
      message: 'every entry acked',
    });
    await acked(stream, 'g', ids.length * 2);
    const twice = [...runs].filter(([, count]) => count > 1).map(([id]) => id);
    expect(twice).toEqual([]);
    expect([...runs.keys()].sort()).toEqual([...ids].sort());
    expect(consumer.snapshot().totalDuplicates).toBe(ids.length);
  });

  it('a backlog with each copy two reads after its id, handlers that never yield: every id runs once (the copies are looked up two reads ahead, before their twins are handled)', async () => {
    const stream = fresh();
    const batchSize = 10;
    const ids: string[] = [];
    // per round: a batch of originals, a batch of other ids, then the originals' copies. The
    // handler never yields, so a read's reply is read between batches: the copies' read lands
    // (and is looked up) while the originals wait to be handled or for their XACK
    const pipeline = redis.pipeline();
    for (let b = 0; b < 20; b++) {
      const batch = Array.from({ length: batchSize }, (_, i) => `order-${b}-${i}`);
      const others = Array.from({ length: batchSize }, (_, i) => `other-${b}-${i}`);
      for (const id of [...batch, ...others]) pipeline.xadd(stream, '*', 'id', id, 'data', '{}');
      for (const id of batch) pipeline.xadd(stream, '*', 'id', id, 'data', '{"copy":true}');
      ids.push(...batch, ...others);
    }
    await pipeline.exec();
    const runs = new Map<string, number>();
    const { consumer } = start({
      stream,
      group: 'g',
      options: { dedup: true, batchSize, minIdleMs: 10_000 },
      handle: (m) => void runs.set(m.id, (runs.get(m.id) ?? 0) + 1),
    });
    const total = ids.length + 20 * batchSize;
    await waitFor(() => consumer.snapshot().totalAcked === total, {
      timeoutMs: 30_000,
      message: 'every entry acked',
    });
    await acked(stream, 'g', total);
    expect([...runs].filter(([, count]) => count > 1)).toEqual([]);
    expect([...runs.keys()].sort()).toEqual([...ids].sort());
    expect(consumer.snapshot().totalDuplicates).toBe(20 * batchSize);
  });

  it('only acked entries count: a dead-lettered entry redriven under its id runs again', async () => {
    const stream = fresh();
    const seen: Array<{ id: string; v: number }> = [];
    start({
      stream,
      group: 'g',
      options: { dedup: true },
      handle: (m: StreamMessage<unknown>) => {
        const { v } = m.payload as { v: number };
        seen.push({ id: m.id, v });
        if (v === 1) throw new NonRetryableError('bad input');
      },
    });
    await xadd(stream, 'order-7', { v: 1 });
    await waitFor(async () => (await redis.xlen(`${stream}:dlq`)) === 1, {
      message: 'dead-lettered',
    });
    await xadd(stream, 'order-7', { v: 2 }); // the redrive, fixed
    await waitFor(() => seen.length === 2);
    expect(seen).toEqual([
      { id: 'order-7', v: 1 },
      { id: 'order-7', v: 2 },
    ]);
  });

  it('{ windowMs }: a duplicate after the window runs again', async () => {
    const stream = fresh();
    const seen: string[] = [];
    start({
      stream,
      group: 'g',
      options: { dedup: { windowMs: 400 }, blockMs: 50 },
      handle: (m) => void seen.push(m.entryId),
    });
    await xadd(stream, 'w', 1);
    await waitFor(() => seen.length === 1);
    await acked(stream, 'g', 1);
    await sleep(150);
    await xadd(stream, 'w', 2); // within the window: skipped
    await acked(stream, 'g', 2);
    expect(seen).toHaveLength(1);
    await sleep(500);
    await xadd(stream, 'w', 3); // past it: runs
    await waitFor(() => seen.length === 2);
    await acked(stream, 'g', 3);
    expect(seen).toHaveLength(2);
  });

  it('off by default: a duplicate runs again and nothing is read or written for it (no MGET, no script)', async () => {
    const stream = fresh();
    const seen: string[] = [];
    // every command the server runs meanwhile (the pause watch's MGET of pause flags is another
    // feature's; a skip record is an MGET or script naming an echo-dedup / echo-newest key)
    const monitor = await redis.monitor();
    const seenCommands: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => seenCommands.push(args.map(String)));
    try {
      start({ stream, group: 'g', handle: (m) => void seen.push(m.entryId) });
      await xadd(stream, 'same', 1);
      await xadd(stream, 'same', 2);
      await waitFor(() => seen.length === 2);
      await acked(stream, 'g', 2);
      await sleep(300);
    } finally {
      monitor.disconnect();
    }
    const ofStream = seenCommands.filter((args) => args.some((arg) => arg.includes(stream)));
    expect(ofStream.some((args) => /^xack$/i.test(args[0]))).toBe(true); // the monitor saw the loop
    const skipReads = ofStream.filter(
      (args) => /^mget$/i.test(args[0]) && args.some((arg) => /echo-(dedup|newest)/.test(arg)),
    );
    expect(skipReads).toEqual([]);
    expect(ofStream.filter((args) => /^(evalsha|eval)$/i.test(args[0]))).toEqual([]);
    expect(await redis.keys(`{${stream}}*`)).toEqual([]);
  });
});

describe('newerWins', () => {
  it('a stale reclaim (an old entry of a key re-claimed after a newer one was acked) is acked without a handler call', async () => {
    const stream = fresh();
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const older = brandedId();
    const newer = brandedId();
    const oldEntry = await xadd(stream, older, { account: 'acct-1', v: 'old' });
    // a consumer takes the old entry and dies with it
    await redis.xreadgroup('GROUP', 'g', 'dead', 'COUNT', 1, 'STREAMS', stream, '>');
    const newEntry = await xadd(stream, newer, { account: 'acct-1', v: 'new' });
    const seen: string[] = [];
    const { consumer, logger } = start({
      stream,
      group: 'g',
      options: {
        newerWins: (m: StreamMessage<never>) => (m.payload as { account: string }).account,
        minIdleMs: 600,
        claimIntervalMs: 100,
      },
      handle: (m) => void seen.push(m.entryId),
    });
    await waitFor(() => seen.length === 1);
    await waitFor(async () => (await pendingCount(stream, 'g')) === 0, {
      message: 'the old entry re-claimed and acked',
    });
    expect(seen).toEqual([newEntry]);
    expect(consumer.snapshot()).toMatchObject({ totalStale: 1, totalDuplicates: 0 });
    expect(logger.has(new RegExp(`entry ${oldEntry} skipped \\(stale\\)`))).toBe(true);
    expect(await redis.get(`{${stream}}:echo-newest::g:acct-1`)).toBe(newer);
  });

  it('a backlog where each key has an older entry in the read after its newer one: every older one is skipped as stale, also when a sweep settles the read sent ahead first', async () => {
    const stream = fresh();
    const batchSize = 10;
    const stale: string[] = [];
    for (let b = 0; b < 20; b++) {
      const keys = Array.from({ length: batchSize }, (_, i) => `acct-${b}-${i}`);
      const older = keys.map(() => brandedId()); // minted first: older
      const newer = keys.map(() => brandedId());
      for (let i = 0; i < batchSize; i++) await xadd(stream, newer[i], { account: keys[i] });
      for (let i = 0; i < batchSize; i++)
        stale.push(await xadd(stream, older[i], { account: keys[i] }));
    }
    const ran: string[] = [];
    const { consumer } = start({
      stream,
      group: 'g',
      options: {
        newerWins: (m: StreamMessage<never>) => (m.payload as { account: string }).account,
        batchSize,
        claimIntervalMs: 20,
        minIdleMs: 10_000,
      },
      handle: async (m) => {
        ran.push(m.entryId);
        await sleep(1);
      },
    });
    await waitFor(() => consumer.snapshot().totalAcked === stale.length * 2, {
      timeoutMs: 30_000,
      message: 'every entry acked',
    });
    expect(ran.filter((entryId) => stale.includes(entryId))).toEqual([]);
    expect(ran).toHaveLength(stale.length);
    expect(consumer.snapshot().totalStale).toBe(stale.length);
  });

  it('concurrency: 8: entries of one key never run at once and run in stream order; other keys run alongside', async () => {
    const stream = fresh();
    const keys = ['k1', 'k2', 'k3', 'k4'];
    const published = new Map<string, string[]>(keys.map((k) => [k, []]));
    for (let i = 0; i < 48; i++) {
      const key = keys[i % keys.length];
      published.get(key)?.push(await xadd(stream, brandedId(), { account: key, i }));
    }
    const started = new Map<string, string[]>(keys.map((k) => [k, []]));
    const active = new Map<string, number>();
    let overlapsOfOneKey = 0;
    let running = 0;
    let mostAtOnce = 0;
    start({
      stream,
      group: 'g',
      options: {
        concurrency: 8,
        batchSize: 48,
        newerWins: (msg: StreamMessage<never>) => (msg.payload as { account: string }).account,
      },
      handle: async (msg) => {
        const key = (msg.payload as { account: string }).account;
        started.get(key)?.push(msg.entryId);
        active.set(key, (active.get(key) ?? 0) + 1);
        if ((active.get(key) ?? 0) > 1) overlapsOfOneKey++;
        mostAtOnce = Math.max(mostAtOnce, ++running);
        await sleep(1 + ((msg.payload as { i: number }).i % 5) * 3); // uneven handler times
        running--;
        active.set(key, (active.get(key) ?? 0) - 1);
      },
    });
    await waitFor(() => [...started.values()].every((list) => list.length === 12), {
      message: 'every entry handled',
    });
    expect(overlapsOfOneKey).toBe(0);
    expect(started).toEqual(published);
    expect(mostAtOnce).toBeGreaterThan(1); // keys did run alongside each other
  });
});
