/**
 * A group rate budget shared by three OS processes running the BUILT package (issue 11). Invariant:
 * over every consumer of the group, no window of `perMs` sees more than `max` handler starts
 * (+10 %), and nothing is lost or left pending (oracle (1)-(5)).
 */
import * as path from 'node:path';
import type { Redis } from 'ioredis';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import {
  assertBuilt,
  ConsumerProcess,
  makeWorkDir,
  stopAllConsumerProcesses,
} from './support/consumer-fleet';
import {
  assertOracle,
  formatReport,
  oracleInput,
  OracleProducer,
  readLedger,
  waitForQuiet,
} from './support/oracle';

let server: RedisServer;
let redis: Redis;
let workDir: string;

beforeAll(async () => {
  assertBuilt();
  server = await RedisServer.start();
  redis = server.client();
  workDir = makeWorkDir();
});

afterAll(async () => {
  await stopAllConsumerProcesses();
  await stopAllRedisServers();
});

it('N=3 processes with a group budget stay within max (+10 %) per window together', async () => {
  const stream = `rate-group-${process.pid}`;
  const ledger = path.join(workDir, `${stream}.ledger`);
  const producer = new OracleProducer(redis, stream);
  const max = 20;
  const perMs = 500;
  const defaults = {
    blockMs: 500,
    batchSize: 10,
    rateLimit: { max, perMs, scope: 'group' as const },
  };
  const fleet = ['a', 'b', 'c'].map(
    (name) =>
      new ConsumerProcess({ redisUrl: server.url, stream, group: 'g', name, ledger, defaults }),
  );
  await Promise.all(fleet.map((p) => p.start()));
  await producer.publishAtomically(200);
  const report = await waitForQuiet(oracleInput(redis, producer, ledger), { timeoutMs: 20_000 });
  assertOracle(report);

  const records = readLedger(ledger);
  const windows = new Map<number, number>();
  for (const r of records) {
    const w = Math.floor(r.startedAt / perMs);
    windows.set(w, (windows.get(w) ?? 0) + 1);
  }
  const counts = [...windows.entries()].sort((x, y) => x[0] - y[0]).map(([, c]) => c);
  const consumers = new Set(records.map((r) => r.consumer));
  console.log(
    `rate-limit/group, 3 processes, starts per ${perMs} ms window (max ${max}): ${counts.join(', ')}; ` +
      `consumers ${[...consumers].join(',')}; ${formatReport(report)}`,
  );
  expect(Math.max(...counts)).toBeLessThanOrEqual(Math.floor(max * 1.1));
  expect(counts.length).toBeGreaterThanOrEqual(200 / max); // the budget, not the fleet, set the pace
  expect(consumers.size).toBeGreaterThanOrEqual(2);
  await Promise.all(fleet.map((p) => p.kill('SIGTERM')));
});
