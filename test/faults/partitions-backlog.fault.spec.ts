/**
 * "A replay never goes back" (docs/partitions.md "Order"): the fleet oracle of partitioned
 * streams with kills under load. Three consumer processes of the BUILT package are BEHIND: the
 * entries of 40 keys are published in bursts, so a read holds several entries of a key; while a
 * process has entries in its handlers it is SIGKILLed, several times per run (restarted under its
 * name at once, or after its lease ended and the others took its partitions). From the ledger
 * (support/key-order-ledger.ts), per key: every entry completed; one call at a time; never an entry
 * completed again after a later entry of its key completed (a crash replays at most the entry a
 * key had in hand). Without an acknowledgement before a key's next entry, a kill replays every
 * entry of a read that completed unacknowledged, after later ones of its key completed.
 *
 * ECHO_FLEET_ROUNDS=n runs each case n times (a soak); the default is once.
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
import { completedEntries, keyOrderVerdict, readLedger } from './support/key-order-ledger';

const PARTITIONS = 8;
const LEASE_MS = 1500;
const KEYS = 40;
const PER_KEY = 25;
/** Entries of each key per burst (a burst: every key at once, pipelined). */
const PER_BURST = 5;
const BURST_GAP_MS = 600;
const ROUNDS = Math.max(1, Number(process.env.ECHO_FLEET_ROUNDS ?? 1));

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

for (let round = 1; round <= ROUNDS; round++) {
  const of = ROUNDS > 1 ? ` (round ${round} of ${ROUNDS})` : '';
  it(`never replays an entry after a later one of its key completed, kills under a backlog${of}`, async () => {
    await backlogRun(`${round}-ok`, 0);
  });

  // every first attempt fails: keys are held behind their retries (their lanes run beside the
  // batch) when the kills land
  it(`the same with every first attempt failing (held keys' lanes)${of}`, async () => {
    await backlogRun(`${round}-fail`, 1);
  });
}

/** Handler calls of the current run of `p` that completed in the last 100 ms. */
function doneLately(p: ConsumerProcess): number {
  const since = Math.max(p.spawnedAt, Date.now() - 100);
  return p.events.filter((e) => e.kind === 'DONE' && e.at >= since).length;
}

async function backlogRun(name: string, failAttempts: number): Promise<void> {
  const stream = `backlog-${process.pid}-${name}`;
  const ledger = path.join(workDir, `${stream}.ledger`);
  const proc = (consumer: string) =>
    new ConsumerProcess({
      redisUrl: server.url,
      stream,
      group: 'g',
      name: consumer,
      ledger,
      handleMs: 10,
      shutdownTimeoutMs: 3000,
      failAttempts,
      defaults: {
        ...(failAttempts > 0 ? { retry: { type: 'fixed', delayMs: 30 } } : {}),
        partitions: PARTITIONS,
        partitionLeaseMs: LEASE_MS,
        concurrency: 2, // two of a partition's ~5 keys at a time: the fleet stays behind
        batchSize: 100, // a read holds every entry of a burst, 5 of each key
        blockMs: 500,
        minIdleMs: 60_000, // only the leases move work between processes
        // every take-over charges the entries it claims twice (the claim, then the drain's read),
        // and the read-ahead's unstarted entries ride along: four kills must not dead-letter them
        maxDeliveries: 50,
      },
    });
  const fleet = ['p1', 'p2', 'p3'].map(proc);
  await Promise.all(fleet.map((p) => p.start()));

  // a foreign producer, behind which the fleet falls: bursts of PER_BURST entries of every key
  const publishing = (async () => {
    for (let from = 0; from < PER_KEY; from += PER_BURST) {
      const burst = redis.pipeline();
      for (let seq = from; seq < from + PER_BURST; seq++)
        for (let k = 0; k < KEYS; k++) {
          const key = `k${k}`;
          const target = `${stream}:p:${crc32(key) % PARTITIONS}`;
          burst.xadd(target, '*', 'id', `${key}.${seq}`, 'data', '{}', 'pkey', key);
        }
      await burst.exec();
      await sleep(BURST_GAP_MS);
    }
  })();

  // kills while the victim has entries in its handlers: restarted under its name at once (its
  // own pending entries drained), or once its lease ended (claimed by the others meanwhile)
  const kills: Array<{ name: string; at: number; inHand: number }> = [];
  const plan: Array<{ victim: ConsumerProcess; restartAfterMs: number }> = [
    { victim: fleet[0], restartAfterMs: 200 },
    { victim: fleet[1], restartAfterMs: LEASE_MS + 500 },
    { victim: fleet[2], restartAfterMs: 200 },
    { victim: fleet[0], restartAfterMs: LEASE_MS + 500 },
  ];
  const restarts: Array<Promise<void>> = [];
  for (const { victim, restartAfterMs } of plan) {
    // in the middle of a backlog: entries in its handlers, several completed in the last 100 ms
    const busy = await waitFor(
      () => (victim.inHand() > 0 && doneLately(victim) >= 3 ? victim.inHand() : 0),
      {
        timeoutMs: 15_000,
        intervalMs: 5,
        message: `${victim.name} holding entries`,
      },
    ).catch(() => 0);
    if (busy === 0) continue; // nothing in hand any more: the backlog is gone
    kills.push({ name: victim.name, at: Date.now(), inHand: busy });
    await victim.kill('SIGKILL');
    restarts.push(sleep(restartAfterMs).then(() => victim.start()));
    await sleep(300);
  }
  await publishing;
  await Promise.all(restarts);

  const total = KEYS * PER_KEY;
  await waitFor(() => completedEntries(readLedger(ledger)).size === total, {
    timeoutMs: 30_000,
    message: `all ${total} entries completed`,
  }).catch(async (err: Error) => {
    const done = completedEntries(readLedger(ledger));
    const missing: string[] = [];
    for (let k = 0; k < KEYS; k++)
      for (let seq = 0; seq < PER_KEY; seq++)
        if (!done.has(`k${k}.${seq}`)) missing.push(`k${k}.${seq}`);
    const pending = await Promise.all(
      Array.from({ length: PARTITIONS }, (_, i) => redis.xinfo('GROUPS', `${stream}:p:${i}`)),
    );
    throw new Error(
      `${err.message}\nmissing ${missing.length}: ${missing.slice(0, 20).join(' ')}\n` +
        `pending per partition: ${JSON.stringify(pending)}\nkills ${JSON.stringify(kills)}\n` +
        fleet.map((p) => `${p.name} (${p.lastExit ?? 'running'}): ${p.errors}`).join('\n'),
    );
  });
  const calls = readLedger(ledger);
  const verdict = keyOrderVerdict(
    calls,
    PER_KEY,
    kills.map((k) => k.at),
  );
  process.stdout.write(
    `partitions backlog${failAttempts > 0 ? ' (every first attempt fails)' : ''}: ${total} entries ` +
      `of ${KEYS} keys over ${PARTITIONS} partitions in bursts of ${PER_BURST} per key; kills ` +
      `${kills.map((k) => `${k.name} (${k.inHand} in hand)`).join(', ')}; ` +
      `${calls.filter((c) => c.done).length} completed calls, ${verdict.reRuns} re-run, ` +
      `${verdict.wentBack.length} completed after a later entry of their key, ` +
      `${verdict.overlaps.length} overlapping; longest stall of a key across a kill ` +
      `${verdict.longestStall.ms} ms\n`,
  );
  // several kills landed while handlers held entries
  expect(kills.length).toBeGreaterThanOrEqual(3);
  expect(verdict.incomplete).toEqual([]);
  expect(verdict.overlaps.slice(0, 5)).toEqual([]);
  expect(verdict.wentBack.slice(0, 5)).toEqual([]);
  // a crash replays at most the entry a key had in hand: one replay per key and kill at most
  expect(verdict.mostReRunsOfAKey).toBeLessThanOrEqual(kills.length);
  await Promise.all(fleet.map((p) => p.kill('SIGTERM')));
}
