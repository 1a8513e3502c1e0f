/** The loop's stop (lib/consumer/loop/shutdown.ts), with recording parts: no Redis. */
import type { InHand } from '../../lib/consumer/handle/delivery';
import type { FailedEntry, HandlingBatch } from '../../lib/consumer/context/loop-context';
import { Shutdown, StopSwitch, settleWithin } from '../../lib/consumer/loop/shutdown';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import type { RawEntry } from '../../lib/redis/streams-client';
import { testLoop } from '../support/loop-context';
import { freshClock } from '../support/wait-for';

function setUp(inHand: InHand | null = null, fail?: 'send') {
  const loop = testLoop();
  const stopSwitch = new StopSwitch();
  const steps: string[] = [];
  let waiting = ['x-0'];
  const readAhead: RawEntry[] = [{ entryId: 'r-0', fields: [] }];
  const shutdown = new Shutdown(loop.context, {
    stopSwitch,
    parked: { wakeForStop: async () => void steps.push('wake parked read') },
    heartbeat: { stop: () => void steps.push('heartbeat stop') },
    delivery: { inHand },
    acks: {
      landed: async () => void steps.push('acks sent ahead answered'),
      take: () => {
        const taken = waiting;
        waiting = [];
        return taken;
      },
      send: async (ids) => {
        steps.push(`ack ${ids.join(',')}`);
        if (fail === 'send') throw new Error('ack lost');
      },
    },
    readAhead: { takeQuietly: async () => readAhead.splice(0) },
    settlement: {
      release: async (ids, counts, what) =>
        void steps.push(
          `release ${what} ${ids.join(',')} counts ${counts ? [...counts.values()] : 'none'}`,
        ),
    },
    scheduler: {
      route: (failed) => {
        steps.push(`route ${failed.map((f) => f.message.entryId).join(',')}`);
        return { nonRetryable: [], exhausted: [] };
      },
    },
    retries: { releaseAll: async () => void steps.push('release retries') },
    deadLetters: { inFlight: undefined },
    records: {
      handled: (messages, ok) =>
        void steps.push(`records of ${ok.join(',')} (${messages.length} in hand)`),
    },
    closeClient: async () => void steps.push('close'),
  });
  return { loop, stopSwitch, steps, shutdown };
}

function handling(): HandlingBatch {
  const failure = {
    message: { entryId: 'f-0' } as StreamMessage<unknown>,
    error: new Error('x'),
    claimedAt: 0,
    failedAt: 0,
  } satisfies FailedEntry;
  return {
    ids: ['a-0', 'b-0', 'c-0', 'f-0'],
    unsettled: new Set(['b-0', 'c-0']),
    started: new Set(['a-0', 'b-0', 'f-0']),
    ok: ['a-0'],
    failed: [failure],
    touchedAt: 0,
  };
}

/** The messages of the batch in hand of {@link handling}. */
const inHandMessages = ['a-0', 'b-0', 'c-0', 'f-0'].map(
  (entryId) => ({ entryId }) as StreamMessage<unknown>,
);

describe('Shutdown', () => {
  it('a loop never started: stopped, connection closed, nothing else', async () => {
    const { loop, stopSwitch, steps, shutdown } = setUp();
    await shutdown.run(null, 1000);
    expect(stopSwitch.isStopping()).toBe(true);
    expect(stopSwitch.signal.aborted).toBe(true);
    expect(steps).toEqual(['close']);
    expect(loop.counters.snapshot().state).toBe('stopped');
  });

  it('a loop that winds down in time: the parked read is woken, then heartbeat off, connection closed', async () => {
    const { loop, stopSwitch, steps, shutdown } = setUp();
    let finish: () => void = () => undefined;
    const running = new Promise<void>((resolve) => (finish = resolve));
    const stopping = shutdown.run(running, 5000);
    expect(loop.counters.snapshot().state).toBe('stopping');
    expect(steps).toEqual(['wake parked read']);
    finish();
    await stopping;
    expect(steps).toEqual(['wake parked read', 'heartbeat stop', 'close']);
    expect(stopSwitch.isAbandoned()).toBe(false);
    expect(loop.logger.lines.filter((l) => l.startsWith('warn'))).toEqual([]);
    expect(loop.counters.snapshot().state).toBe('stopped');
  });

  it('a stop that gives up: acks what settled (with the records of what finished), releases the unstarted and read-ahead, hands failures to retries, warns', async () => {
    const { loop, stopSwitch, steps, shutdown } = setUp({
      batch: handling(),
      messages: inHandMessages,
      counts: new Map([['c-0', 3]]),
    });
    const started = await freshClock();
    await shutdown.run(new Promise(() => undefined), 50);
    expect(Date.now() - started).toBeGreaterThanOrEqual(49);
    expect(stopSwitch.isAbandoned()).toBe(true);
    expect(steps).toEqual([
      'wake parked read',
      'acks sent ahead answered',
      'records of a-0 (4 in hand)',
      'ack x-0,a-0',
      'release unstarted c-0,r-0 counts 3',
      'route f-0',
      'release retries',
      'heartbeat stop',
      'close',
    ]);
    expect(
      loop.logger.has(/warn T\.h on orders\/g: handlers still running after 50 ms \(entries b-0\)/),
    ).toBe(true);
  });

  it('a settle that fails at the give-up is logged; retries are still released and the link closed', async () => {
    const { loop, steps, shutdown } = setUp(
      { batch: handling(), messages: inHandMessages, counts: null },
      'send',
    );
    await shutdown.run(new Promise(() => undefined), 20);
    expect(
      loop.logger.has(/error .*settling at shutdown failed: ack lost; entries stay pending/),
    ).toBe(true);
    expect(steps.slice(-3)).toEqual(['release retries', 'heartbeat stop', 'close']);
  });
});

describe('settleWithin', () => {
  it('true when the promise settles (even by rejecting) in time, false after ms', async () => {
    expect(await settleWithin(Promise.resolve(), 1000)).toBe(true);
    expect(await settleWithin(Promise.reject(new Error('x')), 1000)).toBe(true);
    expect(await settleWithin(new Promise(() => undefined), 10)).toBe(false);
  });
});
