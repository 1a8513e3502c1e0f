/**
 * The consumer engine against an in-memory `StreamsClient` (test/support/fake-streams-client.ts),
 * for faults and reply shapes that are hard to produce on a real server: an XACK failing at one
 * exact step, XAUTOCLAIM's deleted ids and cursor stalls, read failures and the backoff, the round
 * trips per batch, the heartbeat and the release of unstarted work at stop.
 */
import { StreamConsumer } from '../../lib/consumer/loop/stream-consumer';
import type { EntryHandler } from '../../lib/consumer/context/consumer-config';
import { resolveHandlerOptions } from '../../lib/config/module-options';
import type { StreamHandlerOptions } from '../../lib/interfaces/stream-handler-options.interface';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import type { DeadLetterMessage } from '../../lib/interfaces/dead-letter-message.interface';
import type { PendingQuery, RawEntry } from '../../lib/redis/streams-client';
import { FakeStreamsClient } from '../support/fake-streams-client';
import { deadLetterSink, MemoryLogger } from '../support/engine';
import { sleep, waitFor } from '../support/wait-for';

const S = 's';
const G = 'g';

const started: StreamConsumer[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((c) => c.stop(1000)));
});

interface BuildOptions {
  consumer?: string;
  handle?: (message: StreamMessage<unknown>) => unknown;
  options?: Partial<StreamHandlerOptions>;
  deadLetters?: Array<(letter: DeadLetterMessage) => unknown>;
}

/** A started StreamConsumer over `fake` (blockMs 50 unless given). */
function run(
  fake: FakeStreamsClient,
  opts: BuildOptions = {},
): { consumer: StreamConsumer; logger: MemoryLogger } {
  const logger = new MemoryLogger();
  const handler: EntryHandler = { batch: false, call: opts.handle ?? (() => undefined) };
  const consumer = new StreamConsumer({
    stream: S,
    group: G,
    consumer: opts.consumer ?? 'c1',
    handlerName: 'Unit.handle',
    options: resolveHandlerOptions(S, 'unit', {}, { blockMs: 50, ...opts.options }),
    client: fake,
    handler,
    deadLetters: deadLetterSink(opts.deadLetters),
    logger,
  });
  started.push(consumer);
  consumer.start();
  return { consumer, logger };
}

const isNewRead = (args: unknown[]) => args[4] === '>';
/** XPENDING calls that fetch delivery counts (per consumer), as opposed to the poison sweep (IDLE). */
const isCountQuery = (args: unknown[]) => (args[2] as PendingQuery).consumer !== undefined;
const isSweepQuery = (args: unknown[]) => (args[2] as PendingQuery).minIdleMs !== undefined;

/** A dead peer's entry, idle long past minIdleMs: the sweep has something to look at. */
function leaveIdlePeerEntry(fake: FakeStreamsClient): void {
  fake.seedJson(S, 1, 'peer');
  fake.deliverTo(S, G, 'peer', 1);
  fake.age(S, G, 100_000);
}

describe('acks', () => {
  it('an XACK that fails once is retried on the next beat; the handler is not called again', async () => {
    const fake = new FakeStreamsClient();
    const ids = fake.seedJson(S, 3);
    fake.fail('ack', { error: new Error('ERR ack lost') });
    const seen: string[] = [];
    const { consumer, logger } = run(fake, { handle: (m) => void seen.push(m.entryId) });
    await waitFor(() => fake.callsOf('ack').length === 2 && fake.pel(S, G).size === 0, {
      timeoutMs: 3000,
      message: 'second XACK went through',
    });
    await sleep(200); // more beats
    expect(seen).toEqual(ids);
    expect(fake.callsOf('ack').map((c) => c.args[2])).toEqual([ids, ids]);
    expect(logger.has(/Redis error \(ERR ack lost\); retrying in 100 ms/)).toBe(true);
    expect(consumer.snapshot()).toMatchObject({ totalAcked: 3, totalRead: 3, state: 'running' });
  });

  it('an XACK failing after the own-PEL drain is retried before the drain runs again; nothing is handled twice', async () => {
    const fake = new FakeStreamsClient();
    fake.seedGroup(S, G);
    const ids = fake.seedJson(S, 3);
    fake.deliverTo(S, G, 'c1', 3); // our own held work from before a restart
    fake.fail('ack', { error: new Error('ERR ack lost') });
    const seen: string[] = [];
    const { consumer } = run(fake, { handle: (m) => void seen.push(m.entryId) });
    await waitFor(() => fake.pel(S, G).size === 0, {
      timeoutMs: 3000,
      message: 'drained work acked',
    });
    await sleep(200);
    expect(seen).toEqual(ids);
    expect(fake.callsOf('ack').map((c) => c.args[2])).toEqual([ids, ids]);
    expect(consumer.snapshot()).toMatchObject({ totalAcked: 3 });
  });
});

describe('reclaim (XAUTOCLAIM)', () => {
  it('deleted ids of the third reply element are acked and counted, never handed to the handler or the DLQ', async () => {
    const fake = new FakeStreamsClient();
    fake.seedGroup(S, G);
    const [a, gone, c] = fake.seedJson(S, 3);
    fake.deliverTo(S, G, 'dead-peer', 3);
    fake.deleteEntries(S, [gone]);
    fake.age(S, G, 1000);
    const seen: string[] = [];
    const letters: DeadLetterMessage[] = [];
    const { consumer, logger } = run(fake, {
      options: { minIdleMs: 500 },
      handle: (m) => void seen.push(m.entryId),
      deadLetters: [(l) => void letters.push(l)],
    });
    await waitFor(() => seen.length === 2 && fake.pel(S, G).size === 0, { timeoutMs: 3000 });
    expect(seen).toEqual([a, c]);
    expect(fake.callsOf('ack').map((call) => call.args[2])).toContainEqual([gone]);
    expect(fake.callsOf('add')).toEqual([]);
    expect(letters).toEqual([]);
    expect(consumer.snapshot()).toMatchObject({ totalDeleted: 1, totalDlq: 0, totalAcked: 2 });
    expect(
      logger.has(new RegExp(`warn .*1 pending entries were deleted from the stream \\(${gone}\\)`)),
    ).toBe(true);
  });

  it('a cursor stall (same cursor, nothing claimed) ends the sweep', async () => {
    const fake = new FakeStreamsClient();
    fake.overrides.autoClaim = async () => ({ cursor: '7-0', entries: [], deletedIds: [] });
    leaveIdlePeerEntry(fake);
    run(fake, { options: { minIdleMs: 60_000, claimIntervalMs: 60_000 } });
    await waitFor(() => fake.callsOf('readGroup', isNewRead).length > 0, {
      timeoutMs: 10_000,
      message: 'loop went on to read',
    });
    expect(fake.callsOf('autoClaim').map((c) => c.args[4])).toEqual(['0-0', '7-0']);
  });

  it('maxClaimPasses caps the XAUTOCLAIM passes and the XPENDING pages of one sweep', async () => {
    const fake = new FakeStreamsClient();
    let cursor = 0;
    fake.overrides.autoClaim = async () => ({
      cursor: `${++cursor}-0`,
      entries: [],
      deletedIds: [],
    });
    let page = 0;
    fake.overrides.pending = async (_s: string, _g: string, q: PendingQuery) => {
      if (q.consumer !== undefined) return [];
      page++;
      return Array.from({ length: q.count }, (_, i) => ({
        entryId: `${page * 1000 + i}-0`,
        consumer: 'peer',
        idleMs: 100_000,
        deliveries: 1,
      }));
    };
    leaveIdlePeerEntry(fake);
    run(fake, {
      options: { minIdleMs: 60_000, claimIntervalMs: 60_000, maxClaimPasses: 3, batchSize: 10 },
    });
    await waitFor(() => fake.callsOf('readGroup', isNewRead).length > 0, {
      timeoutMs: 10_000,
      message: 'loop went on to read',
    });
    expect(fake.callsOf('autoClaim').map((c) => c.args[4])).toEqual(['0-0', '1-0', '2-0']);
    expect(fake.callsOf('pending', isSweepQuery)).toHaveLength(3);
  });

  it('without maxClaimPasses the cursor is followed to 0-0', async () => {
    const fake = new FakeStreamsClient();
    let cursor = 0;
    fake.overrides.autoClaim = async () => ({
      cursor: ++cursor < 6 ? `${cursor}-0` : '0-0',
      entries: [],
      deletedIds: [],
    });
    leaveIdlePeerEntry(fake);
    run(fake, { options: { minIdleMs: 60_000, claimIntervalMs: 60_000 } });
    await waitFor(() => fake.callsOf('readGroup', isNewRead).length > 0, { timeoutMs: 10_000 });
    expect(fake.callsOf('autoClaim')).toHaveLength(6);
  });
});

describe('Redis errors and backoff', () => {
  it('a failing read degrades the loop with a growing backoff (100, 200, 400 ms); success restores running and resets it', async () => {
    const fake = new FakeStreamsClient();
    const states = new Set<string>();
    fake.fail('readGroup', { times: 3, when: isNewRead, error: new Error('ERR read refused') });
    const { consumer, logger } = run(fake, { options: { minIdleMs: 60_000 } });
    const poll = setInterval(() => states.add(consumer.snapshot().state), 5);
    try {
      await waitFor(() => logger.has(/recovered after 3 failed attempts/), {
        timeoutMs: 3000,
        message: 'recovered after three failed reads',
      });
      await waitFor(() => consumer.snapshot().state === 'running', { timeoutMs: 1000 });
    } finally {
      clearInterval(poll);
    }
    expect(states.has('degraded')).toBe(true);
    const retries = logger.lines
      .filter((l) => /Redis error/.test(l))
      .map((l) => /retrying in (\d+) ms/.exec(l)?.[1]);
    expect(retries).toEqual(['100', '200', '400']);
    // the reads really were spaced by the backoff
    const at = fake.callsOf('readGroup', isNewRead).map((c) => c.at);
    const gaps = at.slice(1, 4).map((t, i) => t - at[i]);
    expect(gaps[0]).toBeGreaterThanOrEqual(95);
    expect(gaps[1]).toBeGreaterThanOrEqual(195);
    expect(gaps[2]).toBeGreaterThanOrEqual(395);
    expect(consumer.snapshot().lastError).toBe('ERR read refused');

    // the streak was reset: the next failure waits 100 ms again
    fake.fail('readGroup', { when: isNewRead, error: new Error('ERR read refused again') });
    await waitFor(() => logger.has(/read refused again\); retrying in 100 ms/), {
      timeoutMs: 10_000,
    });
    await waitFor(
      () =>
        consumer.snapshot().state === 'running' && logger.has(/recovered after 1 failed attempts/),
      {
        timeoutMs: 10_000,
      },
    );
  });

  it('an XACK that keeps failing backs off too, and nothing is handled twice meanwhile', async () => {
    const fake = new FakeStreamsClient();
    const ids = fake.seedJson(S, 2);
    fake.fail('ack', { times: 3, error: new Error('ERR ack refused') });
    const seen: string[] = [];
    const { consumer, logger } = run(fake, { handle: (m) => void seen.push(m.entryId) });
    await waitFor(() => seen.length === 2 && fake.pel(S, G).size === 0, {
      timeoutMs: 3000,
      message: 'acked at last',
    });
    expect(fake.callsOf('ack').map((c) => c.args[2])).toEqual([ids, ids, ids, ids]);
    const retries = logger.lines
      .filter((l) => /Redis error/.test(l))
      .map((l) => /retrying in (\d+) ms/.exec(l)?.[1]);
    expect(retries).toEqual(['100', '200', '400']);
    expect(seen).toEqual(ids);
    expect(consumer.snapshot()).toMatchObject({ totalAcked: 2 });
  });
});

describe('delivery counts', () => {
  it('fresh > reads make no XPENDING call: attempts are 1', async () => {
    const fake = new FakeStreamsClient();
    fake.seedJson(S, 250);
    const attempts: number[] = [];
    run(fake, { options: { batchSize: 100 }, handle: (m) => void attempts.push(m.attempts) });
    await waitFor(() => attempts.length === 250 && fake.pel(S, G).size === 0, { timeoutMs: 3000 });
    expect(new Set(attempts)).toEqual(new Set([1]));
    expect(fake.callsOf('pending', isCountQuery)).toEqual([]);
  });

  it('reclaimed entries get their attempts from ONE XPENDING call per batch', async () => {
    const fake = new FakeStreamsClient();
    fake.seedGroup(S, G);
    fake.seedJson(S, 250);
    fake.deliverTo(S, G, 'dead-peer', 250);
    fake.age(S, G, 1000, 1); // delivered twice already
    const attempts: number[] = [];
    run(fake, {
      options: { batchSize: 100, minIdleMs: 500 },
      handle: (m) => void attempts.push(m.attempts),
    });
    await waitFor(() => attempts.length === 250 && fake.pel(S, G).size === 0, { timeoutMs: 3000 });
    expect(new Set(attempts)).toEqual(new Set([3]));
    expect(fake.callsOf('autoClaim').length).toBeGreaterThanOrEqual(3);
    // three pages of 100, 100, 50: three count queries, each over its page only
    const queries = fake.callsOf('pending', isCountQuery).map((c) => c.args[2] as PendingQuery);
    expect(queries.map((q) => q.count)).toEqual([100, 100, 50]);
  });

  it('drained own entries get their attempts from ONE XPENDING call per batch', async () => {
    const fake = new FakeStreamsClient();
    fake.seedGroup(S, G);
    fake.seedJson(S, 150);
    fake.deliverTo(S, G, 'c1', 150);
    const attempts: number[] = [];
    run(fake, {
      options: { batchSize: 100, minIdleMs: 60_000 },
      handle: (m) => void attempts.push(m.attempts),
    });
    await waitFor(() => attempts.length === 150 && fake.pel(S, G).size === 0, { timeoutMs: 3000 });
    expect(new Set(attempts)).toEqual(new Set([2]));
    expect(fake.callsOf('pending', isCountQuery)).toHaveLength(2);
  });
});

describe('heartbeat and shutdown', () => {
  it('touches (XCLAIM JUSTID) the entries of a handler running longer than minIdleMs / 2', async () => {
    const fake = new FakeStreamsClient();
    const [slow, next] = fake.seedJson(S, 2);
    let idleOfNextAtEnd = -1;
    let done = 0;
    run(fake, {
      options: { minIdleMs: 200, claimIntervalMs: 60_000 },
      handle: async (m) => {
        if (m.entryId === slow) {
          await sleep(500);
          idleOfNextAtEnd = fake.pel(S, G).get(next)!.idleMs;
        }
        done++;
      },
    });
    await waitFor(() => done === 2 && fake.pel(S, G).size === 0, { timeoutMs: 3000 });
    const touches = fake.callsOf('touch');
    expect(touches.length).toBeGreaterThanOrEqual(2);
    for (const t of touches) expect(t.args).toEqual([S, G, 'c1', [slow, next]]);
    // a peer's XAUTOCLAIM (idle >= 200) would not have stolen the entry still waiting its turn
    expect(idleOfNextAtEnd).toBeGreaterThanOrEqual(0);
    expect(idleOfNextAtEnd).toBeLessThan(200);
    const count = touches.length;
    await sleep(300);
    expect(fake.callsOf('touch')).toHaveLength(count);
  });

  it('a quick handler is never touched', async () => {
    const fake = new FakeStreamsClient();
    fake.seedJson(S, 20);
    run(fake, { options: { minIdleMs: 200, claimIntervalMs: 60_000 } });
    await waitFor(() => fake.pel(S, G).size === 0 && fake.callsOf('ack').length > 0, {
      timeoutMs: 3000,
    });
    await sleep(200);
    expect(fake.callsOf('touch')).toEqual([]);
  });

  it('entries not started at stop are released with release(ids, minIdleMs, counts before the read); the one in flight is acked', async () => {
    const fake = new FakeStreamsClient();
    const [first, second, third] = fake.seedJson(S, 3);
    const seen: string[] = [];
    const { consumer, logger } = run(fake, {
      options: { minIdleMs: 5000 },
      handle: async (m) => {
        seen.push(m.entryId);
        await new Promise<void>((resolve) =>
          m.signal.addEventListener('abort', () => resolve(), { once: true }),
        );
      },
    });
    await waitFor(() => seen.length === 1, { timeoutMs: 10_000 });
    await consumer.stop(2000);
    expect(seen).toEqual([first]);
    expect(fake.callsOf('release').map((c) => c.args)).toEqual([
      [S, G, 'c1', [second, third], 5000, [0, 0]],
    ]);
    expect(fake.callsOf('ack').map((c) => c.args[2])).toEqual([[first]]);
    const pel = fake.pel(S, G);
    expect([...pel.keys()]).toEqual([second, third]);
    for (const row of pel.values()) expect(row.idleMs).toBeGreaterThanOrEqual(5000);
    for (const row of pel.values()) expect(row.deliveries).toBe(0); // the read reached no handler
    expect(logger.has(/released 2 unstarted entries/)).toBe(true);
    expect(consumer.snapshot().state).toBe('stopped');
    expect(fake.callsOf('close')).toHaveLength(1);
  });
});

describe('poison sweep', () => {
  it('poison ids it did not win: a peer has them (left alone) or they were deleted (acked, counted)', async () => {
    let peerGrabs: string | null = null;
    class PeerWinsOne extends FakeStreamsClient {
      override async claim(
        stream: string,
        group: string,
        consumer: string,
        minIdleMs: number,
        ids: readonly string[],
      ): Promise<RawEntry[]> {
        // a peer's XCLAIM lands first on one of them
        if (peerGrabs) this.hold(stream, group, 'peer', [peerGrabs]);
        return super.claim(stream, group, consumer, minIdleMs, ids);
      }
    }
    const fake = new PeerWinsOne();
    fake.seedGroup(S, G);
    const [mine, gone, peers] = fake.seedJson(S, 3);
    fake.deliverTo(S, G, 'dead-peer', 3);
    fake.deleteEntries(S, [gone]);
    fake.age(S, G, 1000);
    peerGrabs = peers;
    const { consumer, logger } = run(fake, {
      options: { minIdleMs: 500, maxDeliveries: 1, claimIntervalMs: 60_000 },
    });
    await waitFor(() => consumer.snapshot().totalDlq === 1, { timeoutMs: 10_000 });
    await waitFor(() => fake.callsOf('readGroup', isNewRead).length > 0, { timeoutMs: 10_000 });
    const dlq = fake.entries(`${S}:dlq`);
    expect(dlq).toHaveLength(1);
    expect(dlq[0].fields).toEqual(expect.arrayContaining(['dlq_entry_id', mine]));
    expect(consumer.snapshot()).toMatchObject({ totalDlq: 1, totalDeleted: 1 });
    expect(logger.has(new RegExp(`deleted from the stream \\(${gone}\\)`))).toBe(true);
    expect([...fake.pel(S, G).entries()]).toEqual([
      [peers, expect.objectContaining({ consumer: 'peer' })],
    ]);
  });

  it('a failed copy to the dead-letter stream leaves the entry pending; the next sweep copies it once', async () => {
    const fake = new FakeStreamsClient();
    fake.seedGroup(S, G);
    const [pill] = fake.seedJson(S, 1);
    fake.deliverTo(S, G, 'dead-peer', 1);
    fake.age(S, G, 1000, 4); // five deliveries
    fake.fail('add', { error: new Error('ERR dlq write refused') });
    const { consumer, logger } = run(fake, { options: { minIdleMs: 100, claimIntervalMs: 20 } });
    await waitFor(() => logger.has(/Dead-letter path failed .*ERR dlq write refused/), {
      timeoutMs: 10_000,
    });
    expect(fake.pel(S, G).has(pill)).toBe(true);
    await waitFor(() => fake.pel(S, G).size === 0, {
      timeoutMs: 10_000,
      message: 'dead-lettered on a later sweep',
    });
    expect(fake.callsOf('add')).toHaveLength(2);
    expect(fake.entries(`${S}:dlq`)).toHaveLength(1);
    expect(consumer.snapshot().totalDlq).toBe(1);
  });
});

describe('waiting retries read again', () => {
  it('our own reclaim of a waiting retry (heartbeat behind) charges it no delivery: attempt 2 still runs', async () => {
    // Invariant (docs/delivery.md "What counts as a delivery"): a read that reached no handler is not
    // charged. A waiting retry that looks idle past minIdleMs (a stalled event loop kept the
    // heartbeat from touching it) is taken by our own sweep's XAUTOCLAIM, which bumps its count;
    // the loop skips it (it waits for its time) and puts the count back, so when it comes due it
    // runs as attempt 2 instead of being dead-lettered unhandled as a poison pill.
    const fake = new FakeStreamsClient();
    fake.seedJson(S, 1);
    const attempts: number[] = [];
    const letters: DeadLetterMessage[] = [];
    run(fake, {
      options: {
        minIdleMs: 1000,
        claimIntervalMs: 20,
        maxDeliveries: 2,
        retry: { type: 'fixed', delayMs: 400 },
      },
      handle: (message) => {
        attempts.push(message.attempts);
        throw new Error('still failing');
      },
      deadLetters: [(letter) => void letters.push(letter)],
    });
    await waitFor(() => attempts.length === 1, { timeoutMs: 10_000, message: 'attempt 1' });
    fake.age(S, G, 5000); // the heartbeat fell behind: the waiting retry looks idle
    await waitFor(() => fake.callsOf('autoClaim').some((c) => c.args[3] === 1000), {
      timeoutMs: 10_000,
      message: 'the sweep reclaimed the idle-looking retry',
    });
    await waitFor(() => letters.length === 1, { timeoutMs: 3000, message: 'dead-lettered' });
    expect(attempts).toEqual([1, 2]);
    expect(letters[0]).toMatchObject({ reason: 'max_deliveries', attempts: 2 });
  });
});
