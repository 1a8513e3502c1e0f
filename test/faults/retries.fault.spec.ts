/**
 * Retries and crashes (issue 11), with consumers as separate OS processes running the BUILT
 * package. Invariant (oracle (1)-(5)): a consumer SIGKILLed while retries wait loses none of them;
 * a live peer handles every one, none before it was due, nothing stays pending.
 */
import * as path from 'node:path';
import type { Redis } from 'ioredis';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';
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
  readFailures,
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

describe('retries survive a crash', () => {
  it('SIGKILL while 20 retries wait: a live peer handles all of them after minIdleMs, none early, none lost', async () => {
    const stream = `retry-crash-${process.pid}`;
    const ledger = path.join(workDir, `${stream}.ledger`);
    const producer = new OracleProducer(redis, stream);
    // the retry is due 3 s after the failure (time to start the peer); crash detection takes 4 s
    const defaults = {
      blockMs: 500,
      minIdleMs: 4000,
      claimIntervalMs: 100,
      retry: { type: 'fixed' as const, delayMs: 3000 },
    };
    const common = { redisUrl: server.url, stream, group: 'g', ledger, defaults, failAttempts: 1 };
    const a = new ConsumerProcess({ ...common, name: 'a' });
    const b = new ConsumerProcess({ ...common, name: 'b' });
    await a.start();
    const ids = await producer.publishAtomically(20); // one read: all held by a
    await waitFor(() => a.seen('FAIL').length === 20, { message: 'a failed all 20 once' });
    // b sweeps every 100 ms from now on; a's heartbeat keeps the waiting retries from it
    await b.start();
    await sleep(300);
    const killedAt = Date.now();
    await a.kill('SIGKILL');
    expect(a.seen('START').filter((e) => e.attempts === 2)).toHaveLength(0); // killed while waiting

    const report = await waitForQuiet(oracleInput(redis, producer, ledger), { timeoutMs: 15_000 });
    assertOracle(report); // (1) none lost, (2) none acked unhandled, (3) none pending, (4) no duplicates, (5) none early
    expect(report.acknowledged).toBe(ids.length);
    expect(report.failedAttempts).toBe(20);
    const handled = readLedger(ledger);
    expect(handled.map((r) => r.consumer)).toEqual(Array(20).fill('b'));
    expect(handled.every((r) => r.attempts === 2)).toBe(true);
    // b got nothing while a lived, and everything within minIdleMs (+ sweeps) after the kill
    const starts = b.seen('START').map((e) => e.at);
    expect(Math.min(...starts)).toBeGreaterThanOrEqual(killedAt);
    expect(Math.max(...starts) - killedAt).toBeLessThan(defaults.minIdleMs + 2000);
    expect(readFailures(ledger).every((f) => f.consumer === 'a' && f.attempts === 1)).toBe(true);
    console.log(`retries/SIGKILL: ${formatReport(report)}`);
    await b.kill('SIGTERM');
  });
});
