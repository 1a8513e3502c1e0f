/**
 * Reclaim with the read (docs/compatibility.md "Server features"): on Redis 8.6 a dead peer's
 * entries idle past `minIdleMs` arrive with the loop's next read of new entries (XREADGROUP ...
 * CLAIM), counted, with no sweep between (its pace set to a minute here, so only the read can
 * bring them); a claimed entry past `maxDeliveries` is dead-lettered, never handled. On every
 * other server, and under `serverFeatures: 'baseline'`, the same entries wait for the sweep: the
 * cases prove which path ran.
 */
import type { Redis } from 'ioredis';
import type { DeadLetterMessage, StreamMessage } from '../../lib';
import { chosenServer } from '../../scripts/lib/echo-server.mjs';
import { startedConsumers, type TestConsumerOptions } from '../support/engine';
import { commandCalls, RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

let server: RedisServer;
let redis: Redis;
let seq = 0;
const fresh = (): string => `claim-${process.pid}-${++seq}`;
const consumers = startedConsumers(() => server.url);
/** Redis 8.6 answers CLAIM; every other build of the matrix takes the sweep. */
const NATIVE = chosenServer() === 'redis86';
/**
 * No sweep within a test after the one at start (the second falls at the end of its minute), and
 * the dead peer's entries are written after it: what comes back comes with a read.
 */
const NO_SWEEP = { minIdleMs: 300, claimIntervalMs: 60_000 };
const LAST_PHASE = 1;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterEach(async () => {
  await consumers.stopAll();
});
afterAll(async () => {
  await stopAllRedisServers();
});

/**
 * A consumer started on a fresh stream of group `g` (its options, the sweep a minute away), once
 * its first beat is over (the sweep at start included: a warm-up entry was handled), with what it
 * handled (the warm-up left out).
 */
async function liveConsumer(
  stream: string,
  extra: Partial<Omit<TestConsumerOptions, 'url' | 'stream' | 'group' | 'handle'>> = {},
): Promise<StreamMessage<unknown>[]> {
  await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
  const handled: StreamMessage<unknown>[] = [];
  let warm = false;
  consumers.start({
    stream,
    group: 'g',
    options: NO_SWEEP,
    sweepPhase: LAST_PHASE,
    ...extra,
    handle: (m) => {
      if (m.id === 'warm-up') warm = true;
      else handled.push(m);
    },
  });
  await redis.xadd(stream, '*', 'id', 'warm-up', 'data', '0');
  await waitFor(() => warm, { message: 'the warm-up entry handled' });
  return handled;
}

/**
 * `count` entries added and read by consumer `dead` in one transaction (the live consumer's
 * parked read cannot take them first), pending on it and never acked; the first of them
 * delivered `firstDeliveries` times. Their entry ids.
 */
async function deadPeerHolds(
  stream: string,
  count: number,
  firstDeliveries = 1,
): Promise<string[]> {
  const tx = redis.multi();
  for (let i = 0; i < count; i++) tx.xadd(stream, '*', 'id', `e-${i}`, 'data', `${i}`);
  tx.xreadgroup('GROUP', 'g', 'dead', 'STREAMS', stream, '>');
  const replies = (await tx.exec())!;
  const ids = replies.slice(0, count).map(([, id]) => String(id));
  if (firstDeliveries > 1)
    await redis.xclaim(stream, 'g', 'dead', 0, ids[0], 'RETRYCOUNT', firstDeliveries);
  return ids;
}

/** Calls of `command` the test server served so far. */
const calls = (command: string): Promise<number> => commandCalls(redis, command);

async function pendingOn(stream: string): Promise<Record<string, number>> {
  const summary = (await redis.xpending(stream, 'g')) as [number, string, string, string[][]];
  return Object.fromEntries((summary[3] ?? []).map(([name, n]) => [name, Number(n)]));
}

describe('reclaim with the read (CLAIM)', () => {
  it(
    NATIVE
      ? "Redis 8.6: a dead peer's entries come with the next read, counted as second deliveries, no XAUTOCLAIM sent"
      : "this server has no CLAIM: a dead peer's entries wait for the sweep",
    async () => {
      const stream = fresh();
      const handled = await liveConsumer(stream);
      const autoclaims = await calls('xautoclaim');
      const held = await deadPeerHolds(stream, 5);
      if (NATIVE) {
        await waitFor(() => handled.length === 5, { timeoutMs: 5000, message: 'all five handled' });
        expect(handled.map((m) => [m.entryId, m.attempts])).toEqual(held.map((id) => [id, 2]));
        await waitFor(async () => Object.keys(await pendingOn(stream)).length === 0, {
          message: 'every entry acked',
        });
        expect(await calls('xautoclaim')).toBe(autoclaims);
      } else {
        await sleep(1500); // five times minIdleMs: the reads bring nothing of the dead peer's
        expect(handled).toEqual([]);
        expect(await pendingOn(stream)).toEqual({ dead: 5 });
      }
    },
  );

  it("serverFeatures: 'baseline' leaves a dead peer's entries to the sweep on any server", async () => {
    const stream = fresh();
    const handled = await liveConsumer(stream, { serverFeatures: 'baseline' });
    await deadPeerHolds(stream, 3);
    await sleep(1500);
    expect(handled).toEqual([]);
    expect(await pendingOn(stream)).toEqual({ dead: 3 });
  });

  it(
    NATIVE
      ? 'a claimed entry past maxDeliveries is dead-lettered by the read, never handled'
      : 'a poison pill of a dead peer waits for the sweep here',
    async () => {
      const stream = fresh();
      const letters: DeadLetterMessage[] = [];
      const handled = await liveConsumer(stream, {
        options: { ...NO_SWEEP, maxDeliveries: 3 },
        deadLetters: [(letter) => letters.push(letter)],
      });
      // the dead peer had the first one delivered three times
      const [poison, other] = await deadPeerHolds(stream, 2, 3);
      if (NATIVE) {
        await waitFor(() => letters.length === 1 && handled.length === 1, {
          timeoutMs: 5000,
          message: 'the letter and the other entry',
        });
        expect(handled.map((m) => m.entryId)).toEqual([other]);
        expect(letters.map((l) => [l.entryId, l.attempts, l.reason])).toEqual([
          [poison, 3, 'max_deliveries'],
        ]);
        await waitFor(async () => Object.keys(await pendingOn(stream)).length === 0, {
          message: 'both acked',
        });
      } else {
        await sleep(1500);
        expect([handled, letters]).toEqual([[], []]);
        expect(await pendingOn(stream)).toEqual({ dead: 2 });
      }
    },
  );
});
