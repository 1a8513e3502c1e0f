/**
 * Exactly-once handlers (docs/exactly-once.md) against a real server: what a handler writes
 * through `m.tx` is committed with the entry's acknowledgement, once; a throw writes nothing and
 * the retry starts from no writes; a commit whose entry became another consumer's meanwhile is
 * fenced (nothing written, counted, logged); a commit whose write cannot run leaves the entry
 * pending until its dead letter, nothing written; a duplicate branded id is skipped by the dedup
 * record the commit wrote, and committed once when two consumers handle two copies at once (the
 * commit checks the record); partitions commit in key order.
 */
import { Redis } from 'ioredis';
import { isBrandedId } from '../../lib';
import type { DeadLetterMessage } from '../../lib/interfaces/dead-letter-message.interface';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import { startedConsumers } from '../support/engine';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

let server: RedisServer;
let redis: Redis;
let n = 0;
/** A stream name with a hash tag, so the keys of a test share its slot (as on a Cluster). */
const fresh = () => `{eo-${process.pid}-${++n}}:in`;
const consumers = startedConsumers(() => server.url);
const start = consumers.start;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterEach(() => consumers.stopAll());
afterAll(async () => {
  await stopAllRedisServers();
});

/** XADD by hand, as a producer would: an `id` field and a JSON `data` field. */
async function xadd(stream: string, id: string, data: unknown): Promise<string> {
  return String(await redis.xadd(stream, '*', 'id', id, 'data', JSON.stringify(data)));
}

async function pendingIds(stream: string, group: string): Promise<string[]> {
  const rows = (await redis.xpending(stream, group, '-', '+', 100)) as Array<[string]>;
  return rows.map(([id]) => id);
}

const tag = (stream: string): string => stream.slice(0, stream.indexOf('}') + 1);

describe('exactlyOnce', () => {
  it("commits a handler's publishes and writes with the entry's acknowledgement", async () => {
    const stream = fresh();
    const out = `${tag(stream)}:out`;
    const { consumer } = start({
      stream,
      group: 'g',
      options: { exactlyOnce: true },
      handle: (m: StreamMessage<unknown>) => {
        const { account, amount } = m.payload as { account: string; amount: number };
        m.tx.incrBy(`${m.tx.slotTag}:balance:${account}`, amount);
        m.tx.hset(`${m.tx.slotTag}:last`, account, m.id);
        m.tx.publish(out, { account, amount, seen: m.id });
        m.tx.publish(out, { account, note: 'second output' });
      },
    });
    await xadd(stream, 'p-1', { account: 'a', amount: 250 });
    await xadd(stream, 'p-2', { account: 'a', amount: -50 });
    await xadd(stream, 'p-3', { account: 'b', amount: 7 });
    await waitFor(async () => (await redis.xlen(out)) === 6, { message: 'six outputs' });
    await waitFor(async () => (await pendingIds(stream, 'g')).length === 0, {
      message: 'the source acked',
    });
    expect(await redis.get(`${tag(stream)}:balance:a`)).toBe('200');
    expect(await redis.get(`${tag(stream)}:balance:b`)).toBe('7');
    expect(await redis.hgetall(`${tag(stream)}:last`)).toEqual({ a: 'p-2', b: 'p-3' });
    const outputs = await redis.xrange(out, '-', '+');
    const ids = outputs.map(([, fields]) => fields[fields.indexOf('id') + 1]);
    expect(new Set(ids).size).toBe(6);
    // derived from the source entry's id: branded, in the order written
    expect(ids.every((id) => isBrandedId(id))).toBe(true);
    expect([...ids].sort()).toEqual(ids);
    expect(JSON.parse(outputs[0][1][outputs[0][1].indexOf('data') + 1])).toEqual({
      account: 'a',
      amount: 250,
      seen: 'p-1',
    });
    expect(consumer.snapshot()).toMatchObject({ totalAcked: 3, totalFenced: 0 });
  });

  it('a throw writes nothing; the retry starts from no writes and commits once', async () => {
    const stream = fresh();
    let calls = 0;
    start({
      stream,
      group: 'g',
      options: {
        exactlyOnce: true,
        retry: { type: 'fixed', delayMs: 50 },
      },
      handle: (m) => {
        calls++;
        m.tx.incrBy(`${m.tx.slotTag}:n`, 1);
        if (calls === 1) throw new Error('first attempt fails after its write');
      },
    });
    await xadd(stream, 'p-1', {});
    await waitFor(async () => calls === 2 && (await pendingIds(stream, 'g')).length === 0, {
      message: 'retried and acked',
    });
    expect(await redis.get(`${tag(stream)}:n`)).toBe('1');
  });

  it("is fenced when the entry became another consumer's while its handler ran: nothing written", async () => {
    const stream = fresh();
    let entered: () => void = () => undefined;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { consumer, logger } = start({
      stream,
      group: 'g',
      options: { exactlyOnce: true },
      handle: async (m) => {
        m.tx.incrBy(`${m.tx.slotTag}:n`, 1);
        m.tx.publish(`${tag(stream)}:out`, { from: m.id });
        entered();
        await gate;
      },
    });
    const entryId = await xadd(stream, 'p-1', {});
    await inHandler;
    // a peer takes the entry over (a reclaim after minIdleMs, a partition's new owner)
    await redis.xclaim(stream, 'g', 'peer', 0, entryId);
    release();
    await waitFor(() => consumer.snapshot().totalFenced === 1, { message: 'fenced' });
    expect(await redis.get(`${tag(stream)}:n`)).toBeNull();
    expect(await redis.exists(`${tag(stream)}:out`)).toBe(0);
    // the peer's to commit: still pending, with the peer
    const rows = (await redis.xpending(stream, 'g', '-', '+', 10)) as Array<[string, string]>;
    expect(rows.map(([id, owner]) => [id, owner])).toEqual([[entryId, 'peer']]);
    expect(consumer.snapshot().totalAcked).toBe(0);
    expect(
      logger.has(new RegExp(`warn .*commit of entry ${entryId} \\(owned by peer\\) was refused`)),
    ).toBe(true);
  });

  it('a write that cannot run leaves the entry pending, nothing written, until its dead letter', async () => {
    const stream = fresh();
    const letters: DeadLetterMessage[] = [];
    await redis.hset(`${tag(stream)}:n`, 'not', 'a counter');
    let calls = 0;
    const { logger } = start({
      stream,
      group: 'g',
      options: { exactlyOnce: true, maxDeliveries: 2 },
      handle: (m) => {
        calls++;
        m.tx.publish(`${tag(stream)}:out`, { from: m.id });
        m.tx.incrBy(`${m.tx.slotTag}:n`, 1);
      },
      deadLetters: [(letter) => void letters.push(letter)],
    });
    const entryId = await xadd(stream, 'p-1', {});
    await waitFor(() => letters.length === 1, { message: 'dead-lettered' });
    expect(letters[0].entryId).toBe(entryId);
    expect(calls).toBe(2);
    expect(await redis.exists(`${tag(stream)}:out`)).toBe(0);
    expect(await redis.hgetall(`${tag(stream)}:n`)).toEqual({ not: 'a counter' });
    expect(
      logger.has(new RegExp(`error .*commit of entry ${entryId} \\(INCRBY on .*holds a hash\\)`)),
    ).toBe(true);
  });

  it('skips a duplicate of a committed branded id (the dedup record is committed with it)', async () => {
    const stream = fresh();
    const seen: string[] = [];
    const { consumer } = start({
      stream,
      group: 'g',
      options: { exactlyOnce: true },
      handle: (m) => {
        seen.push(m.entryId);
        m.tx.incrBy(`${m.tx.slotTag}:n`, 1);
      },
    });
    const first = await xadd(stream, 'order-1', {});
    await waitFor(async () => (await pendingIds(stream, 'g')).length === 0 && seen.length === 1);
    await sleep(200);
    await xadd(stream, 'order-1', {}); // a producer's retry, not idempotent
    await waitFor(() => consumer.snapshot().totalDuplicates === 1, { message: 'skipped' });
    expect(seen).toEqual([first]);
    expect(await redis.get(`${tag(stream)}:n`)).toBe('1');
  });

  it('commits one of two copies handled at once by two consumers (the commit checks the dedup record)', async () => {
    const stream = fresh();
    const seen: string[] = [];
    // both copies in hand before either commits: neither look-up can see the other's record
    const handle = async (m: StreamMessage<unknown>): Promise<void> => {
      seen.push(m.entryId);
      for (const until = Date.now() + 5000; seen.length < 2 && Date.now() < until;) await sleep(5);
      m.tx.incrBy(`${m.tx.slotTag}:n`, 1);
    };
    const options = { exactlyOnce: true, batchSize: 1 };
    const one = start({ stream, group: 'g', consumer: 'c1', options, handle });
    const two = start({ stream, group: 'g', consumer: 'c2', options, handle });
    await xadd(stream, 'order-1', {});
    // the second copy once the first is in one consumer's hand: the other, parked, reads it
    await waitFor(() => seen.length === 1, { message: 'the first copy in hand' });
    await xadd(stream, 'order-1', {}); // a producer's retry, not idempotent
    await waitFor(async () => seen.length === 2 && (await pendingIds(stream, 'g')).length === 0, {
      message: 'both copies handled and acked',
    });
    expect(await redis.get(`${tag(stream)}:n`)).toBe('1');
    const snapshots = [one.consumer.snapshot(), two.consumer.snapshot()];
    expect(snapshots.reduce((sum, s) => sum + s.totalDuplicates, 0)).toBe(1);
    expect(snapshots.reduce((sum, s) => sum + s.totalAcked, 0)).toBe(2);
    // each consumer had one copy
    expect(snapshots.map((s) => s.totalAcked)).toEqual([1, 1]);
  });
});
