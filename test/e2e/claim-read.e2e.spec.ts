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
import { startedConsumers } from '../support/engine';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

let server: RedisServer;
let redis: Redis;
let seq = 0;
const fresh = (): string => `claim-${process.pid}-${++seq}`;
const consumers = startedConsumers(() => server.url);
/** Redis 8.6 answers CLAIM; every other build of the matrix takes the sweep. */
const NATIVE = chosenServer() === 'redis86';
/**
 * No sweep within a test after the one at start (the second falls at the end of its minute): what
 * comes back comes with a read.
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

/** `count` entries read by consumer `dead` (pending on it, never acked); their entry ids. */
async function deadPeerHolds(stream: string, count: number): Promise<string[]> {
  await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
  for (let i = 0; i < count; i++) await redis.xadd(stream, '*', 'id', `e-${i}`, 'data', `${i}`);
  const read = (await redis.xreadgroup('GROUP', 'g', 'dead', 'STREAMS', stream, '>')) as Array<
    [string, Array<[string, string[]]>]
  >;
  return read[0][1].map(([id]) => id);
}

/** Calls of `command` since the server started (INFO commandstats). */
async function calls(command: string): Promise<number> {
  const info = await redis.info('commandstats');
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
}

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
      const held = await deadPeerHolds(stream, 5);
      const autoclaims = await calls('xautoclaim');
      const handled: StreamMessage<unknown>[] = [];
      consumers.start({
        stream,
        group: 'g',
        options: NO_SWEEP,
        sweepPhase: LAST_PHASE,
        handle: (m) => handled.push(m),
      });
      await redis.xadd(stream, '*', 'id', 'late', 'data', '"late"');
      if (NATIVE) {
        await waitFor(() => handled.length === 6, { timeoutMs: 5000, message: 'all six handled' });
        // the new entry may come first (read before the others were idle long enough)
        const attempts = new Map(handled.map((m) => [m.id, m.attempts]));
        expect(Object.fromEntries(attempts)).toEqual({
          ...Object.fromEntries(held.map((_, i) => [`e-${i}`, 2])),
          late: 1,
        });
        await waitFor(async () => Object.keys(await pendingOn(stream)).length === 0, {
          message: 'every entry acked',
        });
        expect(await calls('xautoclaim')).toBe(autoclaims);
      } else {
        await waitFor(() => handled.length === 1, { message: 'the new entry handled' });
        await sleep(1500); // five times minIdleMs: the read brings nothing of the dead peer's
        expect(handled.map((m) => m.id)).toEqual(['late']);
        expect(await pendingOn(stream)).toEqual({ dead: 5 });
      }
    },
  );

  it("serverFeatures: 'baseline' leaves a dead peer's entries to the sweep on any server", async () => {
    const stream = fresh();
    await deadPeerHolds(stream, 3);
    const handled: string[] = [];
    consumers.start({
      stream,
      group: 'g',
      options: NO_SWEEP,
      sweepPhase: LAST_PHASE,
      serverFeatures: 'baseline',
      handle: (m) => handled.push(m.id),
    });
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
      const [poison, other] = await deadPeerHolds(stream, 2);
      // the dead peer had it delivered three times
      await redis.xclaim(stream, 'g', 'dead', 0, poison, 'RETRYCOUNT', 3);
      const handled: string[] = [];
      const letters: DeadLetterMessage[] = [];
      consumers.start({
        stream,
        group: 'g',
        options: { ...NO_SWEEP, maxDeliveries: 3 },
        sweepPhase: LAST_PHASE,
        handle: (m) => handled.push(m.entryId),
        deadLetters: [(letter) => letters.push(letter)],
      });
      if (NATIVE) {
        await waitFor(() => letters.length === 1 && handled.length === 1, {
          timeoutMs: 5000,
          message: 'the letter and the other entry',
        });
        expect(handled).toEqual([other]);
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
