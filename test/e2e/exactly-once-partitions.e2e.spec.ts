/**
 * `@StreamHandler(..., { exactlyOnce: true, partitions })` through the Nest module, against a real
 * server (docs/exactly-once.md): a pipeline stage on a partitioned stream commits each entry's
 * output and counters with its acknowledgement, in each key's order (a key's next entry starts
 * once the commit of the one before is in), and a second stage reads the outputs as any stream.
 */
import 'reflect-metadata';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { StreamHandler, StreamProducer, type StreamMessage } from '../../lib';
import { CaptureLogger, createEchoStreamApp } from '../faults/support/nest-app';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

const SOURCE = 'eo-ledger';
const OUTPUT = 'eo-ledger-out';
const RETRIED = 'eo-retried';
const KEYS = 6;
const PER_KEY = 20;

interface Posting {
  account: string;
  n: number;
  amount: number;
}

/** Per account, the `n` of the postings the second stage saw, in the order it saw them. */
const seenDownstream = new Map<string, number[]>();

@Injectable()
class Pipeline {
  @StreamHandler(SOURCE, 'apply', {
    exactlyOnce: true,
    partitions: 4,
    concurrency: 4,
    blockMs: 200,
  })
  apply(m: StreamMessage<Posting>): void {
    const { account, n, amount } = m.payload;
    m.tx.incrBy(`${m.tx.slotTag}:balance:${account}`, amount);
    m.tx.hset(`${m.tx.slotTag}:last`, account, String(n));
    m.tx.publish(OUTPUT, { account, n });
  }

  /** A failing first attempt of every third entry: retried in its key's lane, then committed. */
  @StreamHandler(RETRIED, 'apply', {
    exactlyOnce: true,
    partitions: 2,
    blockMs: 200,
    retry: { type: 'fixed', delayMs: 20 },
  })
  retried(m: StreamMessage<Posting>): void {
    m.tx.incrBy(`${m.tx.slotTag}:n:${m.payload.account}`, 1);
    m.tx.publish(`${m.tx.slotTag}:out`, { account: m.payload.account, n: m.payload.n });
    if (m.attempts === 1 && m.payload.n % 3 === 0) throw new Error('first attempt fails');
  }

  @StreamHandler(OUTPUT, 'audit', { blockMs: 200 })
  audit(m: StreamMessage<{ account: string; n: number }>): void {
    const list = seenDownstream.get(m.payload.account) ?? [];
    list.push(m.payload.n);
    seenDownstream.set(m.payload.account, list);
  }
}

let server: RedisServer;
let redis: Redis;
let app: INestApplication;
const logger = new CaptureLogger();

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
  @Module({ providers: [Pipeline] })
  class PipelineModule {}
  app = await createEchoStreamApp({ connection: server.url }, PipelineModule, logger);
  await app.init();
});
afterAll(async () => {
  await app?.close();
  await stopAllRedisServers();
});

it('commits each partition entry with its output, in key order, once', async () => {
  const producer = app.get(StreamProducer);
  // a backlog: every key has several entries in one read of its partition
  for (let n = 0; n < PER_KEY; n++)
    for (let k = 0; k < KEYS; k++)
      await producer.publish(SOURCE, { account: `a${k}`, n, amount: n + 1 }, { key: `a${k}` });
  const total = KEYS * PER_KEY;
  await waitFor(async () => (await redis.xlen(OUTPUT)) === total, {
    message: `${total} outputs`,
  });
  await waitFor(
    () => [...seenDownstream.values()].reduce((sum, list) => sum + list.length, 0) === total,
    { message: 'the second stage saw every output' },
  );
  const expected = Array.from({ length: PER_KEY }, (_, n) => n);
  for (let k = 0; k < KEYS; k++) {
    // each key's outputs written in its order, each once
    expect(seenDownstream.get(`a${k}`)).toEqual(expected);
  }
  // the counters of every partition stream hold the exact sums
  const balances = new Map<string, number>();
  for (let p = 0; p < 4; p++) {
    const tag = `{${SOURCE}:p:${p}}`;
    for (let k = 0; k < KEYS; k++) {
      const value = await redis.get(`${tag}:balance:a${k}`);
      if (value !== null) balances.set(`a${k}`, (balances.get(`a${k}`) ?? 0) + Number(value));
    }
  }
  const sum = (PER_KEY * (PER_KEY + 1)) / 2;
  expect([...balances.values()]).toEqual(Array.from({ length: KEYS }, () => sum));
  expect(logger.lines.filter((line) => /refused|fenced/.test(line))).toEqual([]);
  // nothing left pending on any partition
  for (let p = 0; p < 4; p++) {
    const [pending] = (await redis.xpending(`${SOURCE}:p:${p}`, 'apply')) as [number];
    expect(Number(pending)).toBe(0);
  }
});

it("an entry retried in its key's lane commits once, in the key's order (not fenced by its retry)", async () => {
  const producer = app.get(StreamProducer);
  for (let n = 0; n < 12; n++)
    for (const account of ['x', 'y'])
      await producer.publish(RETRIED, { account, n, amount: 1 }, { key: account });
  const outputs = async (): Promise<Array<{ account: string; n: number }>> => {
    const all = [];
    for (let p = 0; p < 2; p++)
      for (const [, fields] of await redis.xrange(`{${RETRIED}:p:${p}}:out`, '-', '+'))
        all.push(JSON.parse(fields[fields.indexOf('data') + 1]) as { account: string; n: number });
    return all;
  };
  await waitFor(async () => (await outputs()).length === 24, { message: '24 outputs' });
  const all = await outputs();
  for (const account of ['x', 'y']) {
    expect(all.filter((o) => o.account === account).map((o) => o.n)).toEqual(
      Array.from({ length: 12 }, (_, n) => n),
    );
  }
  let counted = 0;
  for (let p = 0; p < 2; p++)
    for (const account of ['x', 'y'])
      counted += Number((await redis.get(`{${RETRIED}:p:${p}}:n:${account}`)) ?? 0);
  expect(counted).toBe(24);
  expect(logger.lines.filter((line) => /refused|fenced/.test(line))).toEqual([]);
});
