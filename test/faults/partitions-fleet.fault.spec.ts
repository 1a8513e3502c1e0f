/**
 * The fleet oracle of partitioned streams (docs/partitions.md): consumer processes running the
 * BUILT package share the partitions of one group while entries of tens of keys are published;
 * processes are SIGKILLed, join, restart under their old name and stop gracefully during the run.
 * From the ledger of handler starts and ends (one host clock, one line per call; the oracle in
 * support/key-order-ledger.ts), per key: every entry completed, no start before the previous call
 * of the key ended, and no entry completed again after a later entry of its key completed. Reports
 * the longest stall of a key after a kill and the hand-off time of a graceful stop. Entries come
 * one every 12 ms here, so no process is behind; partitions-backlog.fault.spec.ts kills processes
 * that are.
 */
import * as path from 'node:path';
import type { Redis } from 'ioredis';
import { crc32 } from '../../lib/codec/partition-key';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';
import {
  assertBuilt,
  ConsumerProcess,
  makeWorkDir,
  stopAllConsumerProcesses,
} from './support/consumer-fleet';
import {
  completedEntries,
  keyOrderVerdict,
  leaseOwners,
  readLedger,
} from './support/key-order-ledger';

const PARTITIONS = 8;
const LEASE_MS = 1500;
const KEYS = 30;
const PER_KEY = 14;

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
  redis.disconnect();
  await stopAllRedisServers();
});

/** Who owns each partition now. */
const owners = (stream: string) => leaseOwners(redis, stream, 'g', PARTITIONS);

it('keeps per-key order across SIGKILLs, joins, a restart and a graceful stop', async () => {
  await fleetRun(0);
});

// every entry fails its first attempt: a failing key is held behind its retry (docs/partitions.md
// "Order") while the fleet moves partitions; the same per-key oracle
it('keeps per-key order when every entry fails its first attempt', async () => {
  await fleetRun(1);
});

async function fleetRun(failAttempts: number): Promise<void> {
  const stream = `fleet-${process.pid}-${failAttempts}`;
  const ledger = path.join(workDir, `${stream}.ledger`);
  const proc = (name: string) =>
    new ConsumerProcess({
      redisUrl: server.url,
      stream,
      group: 'g',
      name,
      ledger,
      handleMs: 10,
      shutdownTimeoutMs: 3000,
      failAttempts,
      defaults: {
        ...(failAttempts > 0 ? { retry: { type: 'fixed', delayMs: 50 } } : {}),
        partitions: PARTITIONS,
        partitionLeaseMs: LEASE_MS,
        concurrency: 4,
        batchSize: 20,
        blockMs: 500,
        minIdleMs: 60_000, // only the leases move work between processes
      },
    });
  const [p1, p2, p3, p4] = ['p1', 'p2', 'p3', 'p4'].map(proc);
  await p1.start();
  await Promise.all([p2.start(), p3.start()]);

  // a foreign producer: XADD to <stream>:p:<crc32(key) mod P> with the key in 'pkey'
  let published = 0;
  const publishing = (async () => {
    for (let seq = 0; seq < PER_KEY; seq++)
      for (let k = 0; k < KEYS; k++) {
        const key = `k${k}`;
        await redis.xadd(
          `${stream}:p:${crc32(key) % PARTITIONS}`,
          '*',
          'id',
          `${key}.${seq}`,
          'data',
          JSON.stringify({ seq }),
          'pkey',
          key,
        );
        published++;
        await sleep(12);
      }
  })();

  const kills: Array<{ name: string; at: number }> = [];
  const kill = async (p: ConsumerProcess) => {
    kills.push({ name: p.name, at: Date.now() });
    await p.kill('SIGKILL');
  };
  await sleep(1000);
  await kill(p1);
  await sleep(500);
  await p4.start(); // a join
  await sleep(1000);
  await kill(p2);
  await sleep(800);
  await p1.start(); // a restart under its old name
  await waitFor(async () => (await owners(stream)).every((o) => o !== null), {
    timeoutMs: 10_000,
    message: 'every partition owned after the kills',
  });
  // a graceful stop: its partitions move to the others once its entries in hand are done
  const before = await owners(stream);
  const p3Had = before.flatMap((o, i) => (o === 'p3' ? [i] : []));
  const termAt = Date.now();
  const exited = p3.kill('SIGTERM');
  await waitFor(
    async () => {
      const now = await owners(stream);
      return p3Had.every((i) => now[i] !== null && now[i] !== 'p3');
    },
    { timeoutMs: 10_000, intervalMs: 10, message: `p3's partitions ${p3Had} taken over` },
  );
  const handOffMs = Date.now() - termAt;
  await exited;
  await publishing;

  const total = KEYS * PER_KEY;
  await waitFor(() => completedEntries(readLedger(ledger)).size === total, {
    timeoutMs: 30_000,
    message: `all ${total} entries completed`,
  });
  expect(published).toBe(total);

  const calls = readLedger(ledger);
  const verdict = keyOrderVerdict(
    calls,
    PER_KEY,
    kills.map((k) => k.at),
  );
  // every entry of every key completed, one call at a time per key, never one going back
  expect(verdict.incomplete).toEqual([]);
  expect(verdict.overlaps).toEqual([]);
  expect(verdict.wentBack).toEqual([]);
  const { ms: longestStall, key: stallKey } = verdict.longestStall;
  const reRuns = verdict.reRuns;
  const done = calls.filter((c) => c.done);
  // a handover starts no later than the lease allows: generous bounds, figures reported
  expect(handOffMs).toBeLessThan(5000);
  expect(longestStall).toBeLessThan(LEASE_MS + 8000);
  process.stdout.write(
    `partitions fleet${failAttempts > 0 ? ` (first ${failAttempts} attempt(s) of every entry fail)` : ''}: ${total} entries of ${KEYS} keys over ${PARTITIONS} partitions, ` +
      `${done.length} completed calls (${reRuns} re-run after a SIGKILL), kills ${kills
        .map((k) => k.name)
        .join(', ')}; longest stall of a key across a kill ${longestStall} ms (${stallKey}, ` +
      `lease ${LEASE_MS} ms); graceful hand-off of ${p3Had.length} partition(s) ${handOffMs} ms\n`,
  );
  await Promise.all([p1, p2, p4].map((p) => p.kill('SIGTERM')));
}
