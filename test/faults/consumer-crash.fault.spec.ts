/**
 * Consumer crashes and shutdowns, with consumers as separate OS processes running the BUILT package
 * (issue 5 scenarios 1-4 and 9). Redis here is a plain throw-away server: these faults are the
 * consumer's, not the server's.
 */
import * as path from 'node:path';
import type { Redis } from 'ioredis';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { waitFor } from '../support/wait-for';
import {
  assertBuilt,
  ConsumerProcess,
  makeWorkDir,
  stopAllConsumerProcesses,
  type ConsumerProcessOptions,
} from './support/consumer-fleet';
import {
  assertOracle,
  formatReport,
  oracleInput,
  OracleProducer,
  readDeadLetters,
  readLedger,
  runOracle,
  waitForQuiet,
  type OracleReport,
} from './support/oracle';

/** Short timings so the whole folder stays fast; each test overrides what it is about. */
const FAST = { blockMs: 500, minIdleMs: 1000, claimIntervalMs: 200 };

let server: RedisServer;
let redis: Redis;
let workDir: string;
let seq = 0;

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

/** A fresh stream, its ledger, a recording producer and the oracle over them. */
function scenario(tag: string) {
  const stream = `crash-${tag}-${process.pid}-${++seq}`;
  const group = 'g';
  const ledger = path.join(workDir, `${stream}.ledger`);
  const producer = new OracleProducer(redis, stream);
  const input = oracleInput(redis, producer, ledger, group);
  return {
    stream,
    group,
    ledger,
    producer,
    consumer(name: string, extra: Partial<ConsumerProcessOptions> = {}): ConsumerProcess {
      return new ConsumerProcess({
        redisUrl: server.url,
        stream,
        group,
        name,
        ledger,
        ...extra,
        defaults: { ...FAST, ...extra.defaults },
      });
    },
    oracle: (): Promise<OracleReport> => runOracle(input),
    quiet: (timeoutMs = 15_000): Promise<OracleReport> => waitForQuiet(input, { timeoutMs }),
  };
}

/** Waits for a START event of `proc` that came after `since` and has no DONE yet. */
async function inFlight(proc: ConsumerProcess, since: number, timeoutMs = 10_000): Promise<string> {
  const event = await waitFor(
    () =>
      proc.events.find(
        (e) => e.kind === 'START' && e.at >= since && proc.seen('DONE', e.id).length === 0,
      ),
    { timeoutMs, message: `${proc.name} mid-handler` },
  );
  return event!.id;
}

describe('consumer processes crash and shut down (oracle: no loss, no ack without handling, nothing stuck)', () => {
  it('S1: a consumer SIGKILLed mid-handler: a live peer reclaims its entries after minIdleMs and handles all of them', async () => {
    // Invariant: every acknowledged write is handled (no loss), XPENDING ends at 0, the entry the
    // dead process was handling is handled by the peer as a redelivery (attempts >= 2), and any
    // duplicate is an entry the dead process had completed but not yet acked.
    const s = scenario('s1');
    const a = s.consumer('a', { handleMs: 400 });
    const b = s.consumer('b', { handleMs: 10 });
    await a.start();
    const ids = await s.producer.publishAtomically(12); // one batch, all held by a
    await b.start();
    const victim = await inFlight(a, b.readyAt);
    const killedAt = Date.now();
    await a.kill('SIGKILL');
    expect(a.seen('DONE', victim)).toHaveLength(0); // really killed inside the handler

    const report = await s.quiet();
    assertOracle(report, { duplicatesAllowed: true });
    expect(report.acknowledged).toBe(ids.length);

    const completedByA = new Set(a.seen('DONE').map((e) => e.id));
    for (const [id] of report.duplicateIds) expect(completedByA.has(id)).toBe(true);
    const byB = readLedger(s.ledger).filter((r) => r.consumer === 'b');
    const victimRecord = byB.find((r) => r.id === victim);
    expect(victimRecord?.attempts).toBeGreaterThanOrEqual(2);
    // b got nothing until a's claim expired: a's heartbeat kept it while a lived
    const firstReclaim = Math.min(...b.seen('START').map((e) => e.at));
    expect(firstReclaim).toBeGreaterThanOrEqual(killedAt);
    expect(firstReclaim - killedAt).toBeLessThan(FAST.minIdleMs + 2000);
    console.log(
      `S1: ${formatReport(report)}; b reclaimed ${firstReclaim - killedAt} ms after the kill`,
    );
  });

  it('S2: a consumer SIGKILLed after its handler returned but before the XACK: a duplicate, never a loss', async () => {
    // Invariant: the entry whose handler completed (ledger line written) but was never acked is
    // redelivered and handled again: exactly one duplicate, no loss, XPENDING 0, and nothing is
    // acked without a ledger record.
    const s = scenario('s2');
    const a = s.consumer('a', { crashAfter: 3 });
    await a.start();
    for (let n = 0; n < 2; n++) {
      await s.producer.publish({ n });
      // acked before the next one: the ack of entry n rides with the read that follows it
      await waitFor(
        async () => (await s.oracle()).pending === 0 && a.seen('DONE').length === n + 1,
      );
    }
    const crashing = await s.producer.publish({ n: 2 });
    await a.waitExit();
    expect(a.lastExit).toBe('SIGKILL');
    expect(a.seen('DONE', crashing!)).toHaveLength(1); // handled, then killed before the ack
    await s.producer.publishMany(2); // written while no consumer runs

    const b = s.consumer('b');
    await b.start();
    const report = await s.quiet();
    assertOracle(report, { duplicatesAllowed: true });
    expect(report.acknowledged).toBe(5);
    expect(report.duplicates).toBe(1);
    expect(report.duplicateIds).toEqual([[crashing, 2]]);
    const again = readLedger(s.ledger).find((r) => r.id === crashing && r.consumer === 'b');
    expect(again?.attempts).toBe(2);
    console.log(`S2: ${formatReport(report)}`);
  });

  it('S3: a consumer restarted with the same name drains its own PEL at once, long before minIdleMs', async () => {
    // Invariant: with minIdleMs 60 s nobody may reclaim, so only the own-PEL drain at start can
    // explain recovery: every entry handled within seconds of the restart, XPENDING 0, drained
    // entries carry attempts >= 2, duplicates only of entries completed before the kill.
    const s = scenario('s3');
    const defaults = { minIdleMs: 60_000 };
    const a = s.consumer('stable', { handleMs: 150, defaults });
    await a.start();
    const started = Date.now();
    const ids = await s.producer.publishAtomically(10);
    await waitFor(() => a.seen('DONE').length >= 2);
    const victim = await inFlight(a, started);
    await a.kill('SIGKILL');
    const completed = new Set(a.seen('DONE').map((e) => e.id));
    const held = Number(((await redis.xpending(s.stream, s.group)) as [number])[0]);
    expect(held).toBeGreaterThan(0); // the dead process's PEL: only a drain or a reclaim frees it

    const restartedAt = Date.now();
    await a.start(); // same name
    const report = await s.quiet(10_000);
    const recoveredIn = Date.now() - restartedAt;
    assertOracle(report, { duplicatesAllowed: true });
    expect(report.acknowledged).toBe(ids.length);
    expect(recoveredIn).toBeLessThan(10_000); // << minIdleMs 60 s
    for (const [id] of report.duplicateIds) expect(completed.has(id)).toBe(true);
    const second = readLedger(s.ledger).filter((r) => r.startedAt >= restartedAt);
    expect(second.map((r) => r.id)).toContain(victim);
    for (const r of second) expect(r.attempts).toBeGreaterThanOrEqual(2);
    console.log(`S3: ${formatReport(report)}; recovered ${recoveredIn} ms after the restart`);
  });

  it('S4: SIGTERM mid-batch is graceful: zero duplicates, and unstarted entries go to a live peer at once', async () => {
    // Invariant: a graceful shutdown finishes the entry in flight and acks everything it handled
    // (zero duplicates), and releases the entries it never started (idle set to minIdleMs), so a
    // live peer with the same minIdleMs takes them at its next sweep (claimIntervalMs), not
    // minIdleMs later. No loss, XPENDING 0.
    const s = scenario('s4');
    const defaults = { minIdleMs: 5000 };
    const a = s.consumer('a', { handleMs: 300, defaults });
    const b = s.consumer('b', { handleMs: 10, defaults });
    await a.start();
    const ids = await s.producer.publishAtomically(20);
    await b.start();
    const victim = await inFlight(a, b.readyAt);
    await a.kill('SIGTERM');
    const exitedAt = Date.now();
    expect(a.seen('DONE', victim)).toHaveLength(1); // the one in flight finished
    const report = await s.quiet(10_000);
    assertOracle(report); // zero duplicates
    expect(report.acknowledged).toBe(ids.length);

    const byB = b.seen('START');
    expect(byB.length).toBeGreaterThan(0);
    const takenAfter = Math.min(...byB.map((e) => e.at)) - exitedAt;
    expect(takenAfter).toBeLessThan(2000); // next sweep, far sooner than minIdleMs (5 s)
    // released with their count restored: a's read never reached a handler, so b's is the first
    for (const e of byB) expect(e.attempts).toBe(1);
    console.log(`S4: ${formatReport(report)}; peer took over ${takenAfter} ms after the exit`);
    await b.kill('SIGTERM');
  });

  it('S4b: SIGTERM while a handler outlasts shutdownTimeoutMs: what settled is acked, what never started is released', async () => {
    // Invariant (docs/delivery.md "Shutdown"): when the in-flight handler does not finish within shutdownTimeoutMs,
    // the entries of the batch that DID finish are still acked (zero duplicates) and the ones
    // never started are still released to the live peer at once; only the entry in flight stays
    // pending until minIdleMs (it had no ledger record, so it is handled once, by the peer).
    const s = scenario('s4b');
    const defaults = { minIdleMs: 4000 };
    const a = s.consumer('a', { handleMs: 700, shutdownTimeoutMs: 300, defaults });
    const b = s.consumer('b', { handleMs: 10, defaults });
    await a.start();
    const ids = await s.producer.publishAtomically(10);
    await b.start();
    await waitFor(() => a.seen('DONE').length >= 1);
    const victim = await inFlight(a, b.readyAt);
    await a.kill('SIGTERM');
    const exitedAt = Date.now();
    expect(a.seen('DONE', victim)).toHaveLength(0); // cut off by the shutdown timeout
    const completedByA = a.seen('DONE').length;
    expect(completedByA).toBeGreaterThanOrEqual(1);

    // the unstarted entries reach b at its next sweep, long before minIdleMs
    await waitFor(() => b.seen('START').length >= ids.length - completedByA - 1, {
      timeoutMs: 1500, // a's heartbeat kept them fresh: minIdleMs alone would take >= 2 s more
      message: 'b took over the released entries',
    });
    const report = await s.quiet(10_000);
    assertOracle(report); // zero duplicates: a's settled entries were acked before it exited
    expect(report.acknowledged).toBe(ids.length);
    const takenAfter = Math.min(...b.seen('START').map((e) => e.at)) - exitedAt;
    console.log(`S4b: ${formatReport(report)}; peer took over ${takenAfter} ms after the exit`);
    await b.kill('SIGTERM');
  });

  it('S9: handlers slower than minIdleMs with two consumers: the heartbeat keeps the claim', async () => {
    // Invariant: while a handler runs longer than minIdleMs its consumer's heartbeat keeps the
    // entries claimed: the busy peer never reclaims them (no duplicate, no concurrent run of one
    // id), delivery counts stay 1, nothing is dead-lettered early (maxDeliveries 2), XPENDING 0.
    const s = scenario('s9');
    const defaults = { minIdleMs: 800, maxDeliveries: 2 };
    const a = s.consumer('a', { handleMs: 2000, defaults });
    const b = s.consumer('b', { handleMs: 2000, defaults });
    await Promise.all([a.start(), b.start()]);
    await s.producer.publishAtomically(2); // one batch to whichever consumer was parked first
    await waitFor(() => a.seen('START').length + b.seen('START').length > 0);
    await s.producer.publishAtomically(2); // the other one, parked and idle, gets these
    const report = await s.quiet(20_000);
    assertOracle(report); // zero duplicates
    const records = readLedger(s.ledger);
    expect(new Set(records.map((r) => r.consumer))).toEqual(new Set(['a', 'b']));
    for (const r of records) {
      expect(r.endedAt - r.startedAt).toBeGreaterThan(defaults.minIdleMs);
      expect(r.attempts).toBe(1);
    }
    expect(await readDeadLetters(redis, `${s.stream}:dlq`)).toEqual([]);
    console.log(`S9: ${formatReport(report)}`);
    await Promise.all([a.kill('SIGTERM'), b.kill('SIGTERM')]);
  });
});
