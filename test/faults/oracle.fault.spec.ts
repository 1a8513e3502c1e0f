/**
 * The oracle itself, checked against hand-made histories: a fault test is only as good as the
 * checks it runs, so each check must fire on the violation it names and stay quiet otherwise.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Redis } from 'ioredis';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { makeWorkDir, stopAllConsumerProcesses } from './support/consumer-fleet';
import { assertOracle, oracleInput, OracleProducer, runOracle } from './support/oracle';

let server: RedisServer;
let redis: Redis;
let dir: string;
let seq = 0;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
  dir = makeWorkDir();
});

afterAll(async () => {
  await stopAllConsumerProcesses();
  await stopAllRedisServers();
});

/** A stream with a group and `count` acknowledged writes, all delivered to consumer `c`. */
async function history(count: number) {
  const stream = `oracle-${++seq}`;
  const ledger = path.join(dir, `${stream}.ledger`);
  await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
  const producer = new OracleProducer(redis, stream);
  const ids = await producer.publishMany(count);
  const read = (await redis.xreadgroup(
    'GROUP',
    'g',
    'c',
    'COUNT',
    100,
    'STREAMS',
    stream,
    '>',
  )) as Array<[string, Array<[string, string[]]>]> | null;
  const entryIds = (read?.[0][1] ?? []).map(([entryId]) => entryId);
  const record = (i: number) =>
    fs.appendFileSync(ledger, `H ${ids[i]} ${entryIds[i]} c 1 0 0 ${process.pid}\n`);
  const oracle = () => runOracle(oracleInput(redis, producer, ledger));
  const line = (text: string) => fs.appendFileSync(ledger, `${text}\n`);
  return { stream, ids, entryIds, record, line, oracle };
}

describe('the oracle', () => {
  it('passes a clean history: each entry handled once, then acked', async () => {
    const h = await history(3);
    for (let i = 0; i < 3; i++) h.record(i);
    await redis.xack(h.stream, 'g', ...h.entryIds);
    const report = await h.oracle();
    expect(() => assertOracle(report)).not.toThrow();
    expect(report).toMatchObject({ acknowledged: 3, handled: 3, duplicates: 0, pending: 0 });
  });

  it('(1)+(2) flags an entry acked without a ledger record: lost and acked unhandled', async () => {
    const h = await history(3);
    h.record(0);
    h.record(1);
    await redis.xack(h.stream, 'g', ...h.entryIds);
    const report = await h.oracle();
    expect(report.lost).toEqual([h.ids[2]]);
    expect(report.ackedWithoutRecord).toEqual([`${h.entryIds[2]} (id ${h.ids[2]})`]);
    expect(() => assertOracle(report, { duplicatesAllowed: true })).toThrow(/\(1\)[^]*\(2\)/);
  });

  it('(3) flags entries left pending and entries never delivered', async () => {
    const h = await history(2);
    h.record(0);
    await redis.xack(h.stream, 'g', h.entryIds[0]);
    await redis.xadd(h.stream, '*', 'id', 'late', 'data', '{}');
    const report = await h.oracle();
    expect(report.pending).toBe(1);
    expect(report.undelivered).toBe(1);
    expect(report.ackedWithoutRecord).toEqual([]); // pending is not acked
    expect(() => assertOracle(report, { duplicatesAllowed: true })).toThrow(/\(3\) XPENDING is 1/);
  });

  it('(4) counts duplicates, and a dead letter counts as accounted for', async () => {
    const h = await history(3);
    h.record(0);
    h.record(0);
    h.record(1);
    await redis.xadd(
      `${h.stream}:dlq`,
      '*',
      'id',
      h.ids[2],
      'data',
      '{}',
      'dlq_reason',
      'max_deliveries',
      'dlq_entry_id',
      h.entryIds[2],
    );
    await redis.xack(h.stream, 'g', ...h.entryIds);
    const report = await h.oracle();
    expect(report).toMatchObject({ lost: [], ackedWithoutRecord: [], duplicates: 1 });
    expect(report.duplicateIds).toEqual([[h.ids[0], 2]]);
    expect(() => assertOracle(report)).toThrow(/\(4\) 1 duplicates/);
    expect(() => assertOracle(report, { duplicatesAllowed: true })).not.toThrow();
  });

  it('(5) flags a retry that started before its failed attempt made it due, by any consumer', async () => {
    const h = await history(2);
    // entry 0: failed at 1000, due at 1500; retried by a peer at 1400 (early)
    h.line(`F ${h.ids[0]} ${h.entryIds[0]} c 1 990 1000 1 1500`);
    h.line(`H ${h.ids[0]} ${h.entryIds[0]} d 2 1400 1410 2`);
    // entry 1: failed at 1000, due at 1500; retried at 1500 (on time)
    h.line(`F ${h.ids[1]} ${h.entryIds[1]} c 1 990 1000 1 1500`);
    h.line(`H ${h.ids[1]} ${h.entryIds[1]} c 2 1500 1510 1`);
    await redis.xack(h.stream, 'g', ...h.entryIds);
    const report = await h.oracle();
    expect(report.failedAttempts).toBe(2);
    expect(report.earlyRetries).toEqual([`${h.ids[0]} attempt 2 by d started 100 ms before due`]);
    expect(report).toMatchObject({ lost: [], ackedWithoutRecord: [], duplicates: 0 });
    expect(() => assertOracle(report)).toThrow(/\(5\) 1 retries started before due/);
  });
});
