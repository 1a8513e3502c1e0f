/**
 * Dead letters, engine level, on a real redis-server (batch mode in the README "API"; docs/delivery.md "The loop" step 5, docs/dead-letters.md, docs/publishing.md).
 * Every test asserts what Redis holds afterwards: the group's PEL (XPENDING), the dead-letter
 * stream (XRANGE / XLEN). Invariants: nothing is acked before its dead letter is safely somewhere,
 * nothing is dead-lettered twice, nothing stays stuck pending.
 */
import { Redis } from 'ioredis';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { makeConsumer, type MemoryLogger, type TestConsumerOptions } from '../support/engine';
import { sleep, waitFor } from '../support/wait-for';
import type { StreamConsumer } from '../../lib/consumer/loop/stream-consumer';
import type { DeadLetterMessage } from '../../lib/interfaces/dead-letter-message.interface';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';

let server: RedisServer;
let redis: Redis;
let n = 0;
const fresh = () => `dlq-${process.pid}-${++n}`;

/** Consumers started by the current test; stopped after it even when it fails. */
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

/** makeConsumer + started + tracked for cleanup. Short sweeps so poison pills move in ~1 s. */
function start(opts: Omit<TestConsumerOptions, 'url'>): {
  consumer: StreamConsumer;
  logger: MemoryLogger;
  control: Redis;
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

/** XADD of `count` json entries `id=<prefix>-i`; returns their entry ids. */
async function publish(stream: string, count: number, prefix = 'evt'): Promise<string[]> {
  const pipeline = redis.pipeline();
  for (let i = 0; i < count; i++)
    pipeline.xadd(stream, '*', 'id', `${prefix}-${i}`, 'data', JSON.stringify({ i }));
  const results = (await pipeline.exec()) ?? [];
  return results.map(([err, id]) => {
    if (err) throw err;
    return String(id);
  });
}

async function pendingCount(stream: string, group: string): Promise<number> {
  const summary = (await redis.xpending(stream, group)) as [number, ...unknown[]];
  return Number(summary[0]);
}

/** Entry ids in the group's PEL. */
async function pendingIds(stream: string, group: string): Promise<string[]> {
  const rows = (await redis.xpending(stream, group, '-', '+', 10_000)) as Array<
    [string, string, number, number]
  >;
  return rows.map((row) => row[0]);
}

/** The dead-letter stream as field maps (and the raw flat lists). */
async function deadLetters(
  stream: string,
): Promise<Array<{ entryId: string; flat: string[]; map: Record<string, string> }>> {
  const entries = await redis.xrange(stream, '-', '+');
  return entries.map(([entryId, flat]) => {
    const map: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) map[flat[i]] = flat[i + 1];
    return { entryId, flat, map };
  });
}

const DLQ_FIELDS = [
  'dlq_reason',
  'dlq_stream',
  'dlq_group',
  'dlq_entry_id',
  'dlq_attempts',
  'dlq_error',
  'dlq_at',
];

/** Poison-pill friendly timings: reclaim after 200 ms idle, sweep every 50 ms. */
const FAST = { minIdleMs: 200, claimIntervalMs: 50 } as const;

describe('poison pills', () => {
  it('reach <stream>:dlq exactly once, with dlq_attempts >= maxDeliveries, while their neighbours are handled and acked', async () => {
    const stream = fresh();
    const dlq = `${stream}:dlq`;
    await publish(stream, 2);
    // the poison pill carries an extra field of a foreign producer: it must survive into the DLQ
    const poisonFlat = ['id', 'evt-poison', 'data', '{"i":"p"}', 'traceparent', '00-abc-01'];
    const poison = String(await redis.xadd(stream, '*', ...poisonFlat));
    await publish(stream, 2, 'tail');
    const handled: string[] = [];
    const poisonAttempts: number[] = [];
    const letters: DeadLetterMessage[] = [];
    const { consumer } = start({
      stream,
      group: 'g',
      options: { ...FAST, maxDeliveries: 3 },
      handle: (m: StreamMessage<unknown>) => {
        if (m.id === 'evt-poison') {
          poisonAttempts.push(m.attempts);
          throw new Error(`boom on attempt ${m.attempts}`);
        }
        handled.push(m.id);
      },
      deadLetters: [(letter) => void letters.push(letter)],
    });

    // the neighbours, also those behind the pill, are handled at once: the pill blocks nothing
    await waitFor(() => handled.length === 4, { timeoutMs: 3000, message: 'neighbours handled' });
    expect(handled).toEqual(['evt-0', 'evt-1', 'tail-0', 'tail-1']);
    await waitFor(
      async () => (await redis.xlen(dlq)) === 1 && (await pendingCount(stream, 'g')) === 0,
      {
        timeoutMs: 8000,
        message: 'poison pill dead-lettered and PEL empty',
      },
    );
    // more sweeps go by: still one dead letter
    await sleep(FAST.minIdleMs * 2);
    expect(await redis.xlen(dlq)).toBe(1);
    expect(await pendingCount(stream, 'g')).toBe(0);

    // the handler saw it maxDeliveries times, never more
    expect(poisonAttempts).toEqual([1, 2, 3]);
    const [letter] = await deadLetters(dlq);
    // the original fields first, in order, then the dlq_* fields
    expect(letter.flat.slice(0, poisonFlat.length)).toEqual(poisonFlat);
    expect(letter.flat.slice(poisonFlat.length).filter((_, i) => i % 2 === 0)).toEqual(DLQ_FIELDS);
    expect(letter.map).toMatchObject({
      id: 'evt-poison',
      data: '{"i":"p"}',
      traceparent: '00-abc-01',
      dlq_reason: 'max_deliveries',
      dlq_stream: stream,
      dlq_group: 'g',
      dlq_entry_id: poison,
      dlq_error: 'boom on attempt 3',
    });
    expect(Number(letter.map.dlq_attempts)).toBeGreaterThanOrEqual(3);
    const at = Date.parse(letter.map.dlq_at);
    expect(new Date(at).toISOString()).toBe(letter.map.dlq_at);
    expect(Math.abs(Date.now() - at)).toBeLessThan(30_000);

    // the @DeadLetter side got the same, once
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({
      reason: 'max_deliveries',
      stream,
      group: 'g',
      consumer: 'test-consumer',
      entryId: poison,
      id: 'evt-poison',
      error: 'boom on attempt 3',
      fields: { id: 'evt-poison', data: '{"i":"p"}', traceparent: '00-abc-01' },
    });
    expect(letters[0].attempts).toBeGreaterThanOrEqual(3);
    expect(consumer.snapshot()).toMatchObject({ totalDlq: 1, totalAcked: 4, totalErrors: 3 });
  });

  it('three consumers of one group racing on the same poison pills dead-letter each exactly once', async () => {
    const stream = fresh();
    const dlq = `${stream}:dlq`;
    const ids = await publish(stream, 40);
    const poison = new Set(ids.filter((_, i) => i % 2 === 0)); // 20 pills, 20 good entries
    const handled: string[] = [];
    const letters: DeadLetterMessage[] = [];
    const make = (name: string) =>
      start({
        stream,
        group: 'g',
        consumer: name,
        // batchSize 5 spreads fresh entries over both consumers; a 10 ms sweep makes them collide
        options: { minIdleMs: 150, claimIntervalMs: 10, maxDeliveries: 2, batchSize: 5 },
        handle: (m) => {
          if (poison.has(m.entryId)) throw new Error(`poison ${m.entryId}`);
          handled.push(m.entryId);
        },
        deadLetters: [(letter) => void letters.push(letter)],
      });
    const a = make('racer-a');
    const b = make('racer-b');
    const c = make('racer-c');

    await waitFor(
      async () => (await redis.xlen(dlq)) >= 20 && (await pendingCount(stream, 'g')) === 0,
      {
        timeoutMs: 10_000,
        message: '20 pills dead-lettered, PEL empty',
      },
    );
    await sleep(400); // several more sweeps of every consumer
    const dead = await deadLetters(dlq);
    expect(dead).toHaveLength(20);
    expect(new Set(dead.map((d) => d.map.dlq_entry_id))).toEqual(poison);
    expect(
      dead.every((d) => d.map.dlq_reason === 'max_deliveries' && Number(d.map.dlq_attempts) >= 2),
    ).toBe(true);
    expect(letters).toHaveLength(20);
    expect(new Set(letters.map((l) => l.entryId)).size).toBe(20);
    const totalDlq = [a, b, c].reduce((sum, x) => sum + x.consumer.snapshot().totalDlq, 0);
    expect(totalDlq).toBe(20);
    expect(new Set(handled).size).toBe(20);
    expect(await pendingCount(stream, 'g')).toBe(0);
  });

  it('a dead-letter handler slower than minIdleMs keeps its entry claimed: a racing peer does not dead-letter it again', async () => {
    const stream = fresh();
    const dlq = `${stream}:dlq`;
    const [pill] = await publish(stream, 1);
    const calls: string[] = [];
    const make = (name: string) =>
      start({
        stream,
        group: 'g',
        consumer: name,
        options: { minIdleMs: 200, claimIntervalMs: 20, maxDeliveries: 1 },
        handle: () => {
          throw new Error('refused');
        },
        deadLetters: [
          async (letter) => {
            calls.push(`${letter.consumer} ${letter.entryId}`);
            await sleep(700); // 3.5 x minIdleMs: the heartbeat must keep the claim
          },
        ],
      });
    const a = make('slow-a');
    const b = make('slow-b');
    await waitFor(async () => calls.length >= 1 && (await pendingCount(stream, 'g')) === 0, {
      timeoutMs: 8000,
      message: 'dead-lettered and acked',
    });
    await sleep(500);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatch(new RegExp(`^slow-[ab] ${pill}$`));
    expect(await redis.xlen(dlq)).toBe(1);
    expect(a.consumer.snapshot().totalDlq + b.consumer.snapshot().totalDlq).toBe(1);
    expect(await pendingCount(stream, 'g')).toBe(0);
  });

  it('a throwing dead-letter handler keeps the entry pending until it succeeds; the DLQ stream then holds one copy', async () => {
    const stream = fresh();
    const dlq = `${stream}:dlq`;
    const [entryId] = await publish(stream, 1);
    const seenAtCall: Array<{ pending: string[]; dlqLength: number }> = [];
    let calls = 0;
    const { consumer, logger } = start({
      stream,
      group: 'g',
      options: { ...FAST, maxDeliveries: 2 },
      handle: () => {
        throw new Error('never works');
      },
      deadLetters: [
        async () => {
          calls++;
          seenAtCall.push({
            pending: await pendingIds(stream, 'g'),
            dlqLength: await redis.xlen(dlq),
          });
          if (calls < 3) throw new Error(`dead-letter sink down (${calls})`);
        },
      ],
    });
    await waitFor(async () => calls === 3 && (await pendingCount(stream, 'g')) === 0, {
      timeoutMs: 10_000,
      message: 'dead-letter handler succeeded on its third call and the entry was acked',
    });
    await sleep(FAST.minIdleMs * 2);
    // during every call the entry was still pending; the copy was made once, before the first call
    expect(seenAtCall).toEqual([
      { pending: [entryId], dlqLength: 1 },
      { pending: [entryId], dlqLength: 1 },
      { pending: [entryId], dlqLength: 1 },
    ]);
    expect(calls).toBe(3);
    expect(await redis.xlen(dlq)).toBe(1);
    expect((await deadLetters(dlq))[0].map).toMatchObject({
      dlq_entry_id: entryId,
      dlq_error: 'never works',
    });
    expect(await pendingCount(stream, 'g')).toBe(0);
    expect(logger.has(/Dead-letter path failed .*stays pending.*dead-letter sink down \(1\)/)).toBe(
      true,
    );
    expect(consumer.snapshot().totalDlq).toBe(1);
  });

  it('deadLetterStream: false with no dead-letter handler: warns with the ids and acks', async () => {
    const stream = fresh();
    const undecodable = String(
      await redis.xadd(stream, '*', 'id', 'evt-undecodable', 'data', '{nope'),
    );
    const poison = String(await redis.xadd(stream, '*', 'id', 'evt-poison', 'data', '{}'));
    const { consumer, logger } = start({
      stream,
      group: 'g',
      options: { ...FAST, maxDeliveries: 2, deadLetterStream: false },
      handle: () => {
        throw new Error('refused');
      },
    });
    // both dropped (pending 0 alone also holds before the first read has delivered anything)
    await waitFor(
      async () => consumer.snapshot().totalDlq === 2 && (await pendingCount(stream, 'g')) === 0,
      { timeoutMs: 8000, message: 'both dropped and acked' },
    );
    const warnings = logger.lines.filter((l) => l.startsWith('warn Dropping'));
    expect(warnings).toHaveLength(2);
    expect(warnings.find((l) => l.includes(undecodable))).toMatch(/decode_error.*evt-undecodable/);
    expect(warnings.find((l) => l.includes(poison))).toMatch(/max_deliveries.*evt-poison/);
    expect(await redis.exists(`${stream}:dlq`)).toBe(0);
    expect(consumer.snapshot().totalDlq).toBe(2);
  });
});

describe('decode errors', () => {
  it('no data field and invalid JSON go to the DLQ at once as decode_error, acked, never to the handler', async () => {
    const stream = fresh();
    const dlq = `${stream}:dlq`;
    const noData = String(await redis.xadd(stream, '*', 'id', 'evt-no-data', 'payload', '{"i":1}'));
    const [good1] = await publish(stream, 1, 'good');
    const badJson = String(await redis.xadd(stream, '*', 'id', 'evt-bad-json', 'data', '{"i":'));
    const [good2] = await publish(stream, 1, 'fine');
    const handled: string[] = [];
    const letters: DeadLetterMessage[] = [];
    const { consumer } = start({
      stream,
      group: 'g',
      // no sweep within the test: "at once" means without any reclaim or poison sweep
      options: { minIdleMs: 60_000 },
      handle: (m) => void handled.push(m.entryId),
      deadLetters: [(letter) => void letters.push(letter)],
    });
    await waitFor(async () => (await redis.xlen(dlq)) === 2 && handled.length === 2, {
      timeoutMs: 3000,
      message: 'two decode errors dead-lettered, two good entries handled',
    });
    await waitFor(async () => (await pendingCount(stream, 'g')) === 0, {
      timeoutMs: 2000,
      message: 'all acked',
    });
    expect(handled).toEqual([good1, good2]);
    const dead = await deadLetters(dlq);
    expect(dead.map((d) => d.map.dlq_entry_id)).toEqual([noData, badJson]);
    expect(dead[0].map).toMatchObject({
      id: 'evt-no-data',
      payload: '{"i":1}',
      dlq_reason: 'decode_error',
      dlq_attempts: '1',
      dlq_stream: stream,
      dlq_group: 'g',
    });
    expect(dead[0].map.dlq_error).toMatch(/no 'data' field/);
    expect(dead[1].map).toMatchObject({
      id: 'evt-bad-json',
      data: '{"i":',
      dlq_reason: 'decode_error',
      dlq_attempts: '1',
    });
    expect(dead[1].map.dlq_error).toMatch(/not valid JSON/);
    expect(letters.map((l) => [l.reason, l.entryId, l.attempts])).toEqual([
      ['decode_error', noData, 1],
      ['decode_error', badJson, 1],
    ]);
    expect(consumer.snapshot()).toMatchObject({ totalDlq: 2, totalAcked: 2, totalErrors: 0 });
  });

  it('a custom codec whose decode throws is a decode_error; its neighbours decode fine', async () => {
    const stream = fresh();
    const dlq = `${stream}:dlq`;
    const ok = String(await redis.xadd(stream, '*', 'id', 'evt-ok', 'n', '7'));
    const bad = String(await redis.xadd(stream, '*', 'id', 'evt-bad', 'n', 'seven'));
    const handled: Array<{ id: string; payload: unknown }> = [];
    const decodeInputs: Array<Record<string, string>> = [];
    start({
      stream,
      group: 'g',
      options: {
        minIdleMs: 60_000,
        codec: {
          encode: (p: unknown) => ({ n: String((p as { n: number }).n) }),
          decode: (fields: Record<string, string>) => {
            decodeInputs.push(fields);
            const value = Number(fields.n);
            if (!Number.isInteger(value)) throw new RangeError(`n is not an integer: ${fields.n}`);
            return { n: value };
          },
        },
      },
      handle: (m) => void handled.push({ id: m.id, payload: m.payload }),
    });
    await waitFor(
      async () => (await redis.xlen(dlq)) === 1 && (await pendingCount(stream, 'g')) === 0,
      {
        timeoutMs: 3000,
        message: 'custom decode failure dead-lettered and acked',
      },
    );
    expect(handled).toEqual([{ id: 'evt-ok', payload: { n: 7 } }]);
    // the id field is the producer's: never passed to decode
    expect(decodeInputs).toEqual([{ n: '7' }, { n: 'seven' }]);
    const [dead] = await deadLetters(dlq);
    expect(dead.map).toMatchObject({
      id: 'evt-bad',
      n: 'seven',
      dlq_reason: 'decode_error',
      dlq_entry_id: bad,
      dlq_error: 'n is not an integer: seven',
    });
    expect(ok).not.toBe(bad);
  });
});

describe('entries deleted while pending', () => {
  it('XAUTOCLAIM path: deleted ids (third reply element) are acked and counted, never handled nor dead-lettered', async () => {
    const stream = fresh();
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const [a, gone, c] = await publish(stream, 3);
    // a peer that died holding the three entries
    await redis.xreadgroup('GROUP', 'g', 'dead-peer', 'COUNT', 10, 'STREAMS', stream, '>');
    expect(await redis.xdel(stream, gone)).toBe(1);
    const handled: string[] = [];
    const letters: DeadLetterMessage[] = [];
    const { consumer, logger } = start({
      stream,
      group: 'g',
      consumer: 'live',
      options: FAST,
      handle: (m) => void handled.push(m.entryId),
      deadLetters: [(letter) => void letters.push(letter)],
    });
    await waitFor(async () => handled.length === 2 && (await pendingCount(stream, 'g')) === 0, {
      timeoutMs: 5000,
      message: 'live entries reclaimed and handled, PEL empty',
    });
    expect(handled).toEqual([a, c]);
    expect(letters).toEqual([]);
    expect(await redis.exists(`${stream}:dlq`)).toBe(0);
    expect(consumer.snapshot()).toMatchObject({ totalDeleted: 1, totalDlq: 0, totalAcked: 2 });
    expect(logger.has(new RegExp(`warn .*deleted from the stream \\(${gone}\\)`))).toBe(true);
  });

  it('own-PEL drain path: a restarted consumer with a stable name acks nil bodies and counts them, never handles them', async () => {
    const stream = fresh();
    const [a, gone, c] = await publish(stream, 3);
    let failures = 0;
    const first = start({
      stream,
      group: 'g',
      consumer: 'stable-1',
      options: { minIdleMs: 60_000 },
      handle: () => {
        failures++;
        throw new Error('down for now');
      },
    });
    await waitFor(() => failures === 3, { timeoutMs: 3000, message: 'three failed deliveries' });
    await stop(first.consumer);
    expect(await pendingIds(stream, 'g')).toEqual([a, gone, c]);
    await redis.xdel(stream, gone);

    const handled: Array<[string, number]> = [];
    const letters: DeadLetterMessage[] = [];
    const second = start({
      stream,
      group: 'g',
      consumer: 'stable-1',
      options: { minIdleMs: 60_000 },
      handle: (m) => void handled.push([m.entryId, m.attempts]),
      deadLetters: [(letter) => void letters.push(letter)],
    });
    await waitFor(async () => handled.length === 2 && (await pendingCount(stream, 'g')) === 0, {
      timeoutMs: 3000,
      message: 'own PEL drained',
    });
    // the drain re-delivers: attempts 2 for both live entries
    expect(handled).toEqual([
      [a, 2],
      [c, 2],
    ]);
    expect(letters).toEqual([]);
    expect(await redis.exists(`${stream}:dlq`)).toBe(0);
    expect(second.consumer.snapshot()).toMatchObject({
      totalDeleted: 1,
      totalDlq: 0,
      totalAcked: 2,
    });
    expect(second.logger.has(new RegExp(`warn .*deleted from the stream \\(${gone}\\)`))).toBe(
      true,
    );
  });

  it('poison sweep path: a deleted poison pill is counted and logged as deleted, not dead-lettered', async () => {
    const stream = fresh();
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const [a, gone] = await publish(stream, 2);
    await redis.xreadgroup('GROUP', 'g', 'dead-peer', 'COUNT', 10, 'STREAMS', stream, '>');
    await redis.xdel(stream, gone);
    // idle past minIdleMs before the loop starts: its first poison sweep (XPENDING + XCLAIM) takes
    // both, and Redis 7's XCLAIM silently drops the deleted one from the PEL
    await sleep(FAST.minIdleMs + 50);
    const { consumer, logger } = start({
      stream,
      group: 'g',
      consumer: 'live',
      options: { ...FAST, maxDeliveries: 1 },
    });
    await waitFor(async () => (await pendingCount(stream, 'g')) === 0, {
      timeoutMs: 5000,
      message: 'PEL empty',
    });
    const dead = await deadLetters(`${stream}:dlq`);
    expect(dead.map((d) => [d.map.dlq_entry_id, d.map.dlq_attempts])).toEqual([[a, '1']]);
    expect(consumer.snapshot()).toMatchObject({ totalDeleted: 1, totalDlq: 1 });
    expect(logger.has(new RegExp(`warn .*deleted from the stream \\(${gone}\\)`))).toBe(true);
  });
});

describe('batch mode', () => {
  it('acks only the returned entries (messages or entry-id strings); decode errors never reach the batch', async () => {
    const stream = fresh();
    const ids = await publish(stream, 3, 'x');
    const undecodable = String(await redis.xadd(stream, '*', 'id', 'evt-bad', 'data', 'not json'));
    ids.push(...(await publish(stream, 3, 'y')));
    const batches: string[][] = [];
    const { consumer } = start({
      stream,
      group: 'g',
      options: { minIdleMs: 60_000, batch: true },
      batchHandle: (messages) => {
        batches.push(messages.map((m) => m.entryId));
        // ack #0 and #4 as messages, #2 as an entry id string
        return [messages[0], messages[2].entryId, messages[4]];
      },
    });
    await waitFor(
      async () =>
        (await pendingIds(stream, 'g')).length === 3 && consumer.snapshot().totalAcked === 3,
      {
        timeoutMs: 3000,
        message: 'three acked, three left',
      },
    );
    await sleep(300); // more beats: nothing else gets acked
    expect(batches).toEqual([ids]);
    expect(await pendingIds(stream, 'g')).toEqual([ids[1], ids[3], ids[5]]);
    const dead = await deadLetters(`${stream}:dlq`);
    expect(dead.map((d) => [d.map.dlq_entry_id, d.map.dlq_reason])).toEqual([
      [undecodable, 'decode_error'],
    ]);
    expect(consumer.snapshot()).toMatchObject({ totalAcked: 3, totalDlq: 1 });
  });

  it('null acks nothing and warns; throwing acks nothing; a later batch is acked normally', async () => {
    for (const verdict of ['null', 'throw'] as const) {
      const stream = fresh();
      const first = await publish(stream, 3);
      const calls: string[][] = [];
      const { consumer, logger } = start({
        stream,
        group: 'g',
        options: { minIdleMs: 60_000, batch: true },
        batchHandle: (messages) => {
          calls.push(messages.map((m) => m.entryId));
          if (calls.length > 1) return messages; // the marker batch: ack it all
          if (verdict === 'throw') throw new Error('batch refused');
          return null;
        },
      });
      await waitFor(() => calls.length === 1, { timeoutMs: 3000, message: 'first batch' });
      // a marker entry after the first batch: once it is acked, the first batch's acks would have gone too
      const [marker] = await publish(stream, 1, 'marker');
      await waitFor(
        async () => calls.length === 2 && !(await pendingIds(stream, 'g')).includes(marker),
        {
          timeoutMs: 3000,
          message: 'marker batch acked',
        },
      );
      expect(calls).toEqual([first, [marker]]);
      expect(await pendingIds(stream, 'g')).toEqual(first);
      if (verdict === 'null') {
        expect(logger.has(/warn .*batch handler returned nothing; acked none of 3 entries/)).toBe(
          true,
        );
        expect(consumer.snapshot()).toMatchObject({ totalAcked: 1, totalErrors: 0 });
      } else {
        expect(logger.has(/error .*failed on a batch of 3 .*batch refused/)).toBe(true);
        expect(consumer.snapshot()).toMatchObject({ totalAcked: 1, totalErrors: 1 });
      }
      await stop(consumer);
    }
  });
});

describe('a large PEL', () => {
  it('1,500 entries whose handler always throws (batchSize 100) all end in the DLQ; XPENDING is 0', async () => {
    const stream = fresh();
    const dlq = `${stream}:dlq`;
    const ids = await publish(stream, 1500);
    let calls = 0;
    let maxPending = 0;
    const { consumer } = start({
      stream,
      group: 'g',
      // every first delivery fails before the first retry is due, so the PEL holds all of them
      // at once; reading 1,500 entries took over 3 s on CI's 2 cores beside three other spec
      // files (the PEL peaked at 1,281 there with a 3 s delay)
      options: {
        ...FAST,
        batchSize: 100,
        maxDeliveries: 2,
        retry: { type: 'fixed', delayMs: 8000 },
      },
      handle: () => {
        calls++;
        throw new Error('always');
      },
    });
    await waitFor(
      async () => {
        const pending = await pendingCount(stream, 'g');
        maxPending = Math.max(maxPending, pending);
        const dead = await redis.xlen(dlq);
        if (dead === 1500 && pending === 0) return true;
        // thrown, not returned: a timeout then says where the entries were
        const { retrying, totalDlq, totalRetries } = consumer.snapshot();
        throw new Error(
          `dlq ${dead}, pending ${pending}, calls ${calls}, ` +
            `snapshot retrying ${retrying} totalRetries ${totalRetries} totalDlq ${totalDlq}`,
        );
      },
      // 8 s of delay plus two rounds of 1,500: about 12 s on one core beside three other spec
      // files; CI's 2 cores ran slower still
      { timeoutMs: 40_000, intervalMs: 50, message: '1,500 dead letters, PEL empty' },
    );
    expect(maxPending).toBe(1500);
    const dead = await deadLetters(dlq);
    expect(new Set(dead.map((d) => d.map.dlq_entry_id))).toEqual(new Set(ids));
    expect(
      dead.every((d) => d.map.dlq_reason === 'max_deliveries' && d.map.dlq_error === 'always'),
    ).toBe(true);
    expect(calls).toBe(3000); // two deliveries each, never a third
    expect(consumer.snapshot()).toMatchObject({ totalDlq: 1500, totalAcked: 0 });
  });

  it('a dead peer PEL of 1,500 poison entries is swept completely, page after page', async () => {
    const stream = fresh();
    const dlq = `${stream}:dlq`;
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const ids = await publish(stream, 1500);
    await redis.xreadgroup('GROUP', 'g', 'dead-peer', 'COUNT', 2000, 'STREAMS', stream, '>');
    expect(await pendingCount(stream, 'g')).toBe(1500);
    let calls = 0;
    const { consumer } = start({
      stream,
      group: 'g',
      consumer: 'sweeper',
      options: { ...FAST, batchSize: 100, maxDeliveries: 1 },
      handle: () => void calls++,
    });
    await waitFor(
      async () => (await redis.xlen(dlq)) === 1500 && (await pendingCount(stream, 'g')) === 0,
      {
        timeoutMs: 15_000,
        intervalMs: 50,
        message: '1,500 dead letters, PEL empty',
      },
    );
    const dead = await deadLetters(dlq);
    expect(dead.map((d) => d.map.dlq_entry_id)).toEqual(ids);
    expect(
      dead.every((d) => d.map.dlq_attempts === '1' && d.map.dlq_reason === 'max_deliveries'),
    ).toBe(true);
    expect(calls).toBe(0);
    expect(consumer.snapshot().totalDlq).toBe(1500);
  });
});
