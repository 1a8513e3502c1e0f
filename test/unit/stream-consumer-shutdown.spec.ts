/**
 * The engine's stop() when a handler outlasts the shutdown timeout (docs/delivery.md "Shutdown"), against the
 * in-memory `StreamsClient`: what settled is still acked, what never started is still released,
 * only the entry in flight stays pending; a read that reaches a loop after its stop gave up is
 * released. (The fault suite checks the same with real processes:
 * test/faults/consumer-crash.fault.spec.ts, S4b.)
 */
import { StreamConsumer } from '../../lib/consumer/loop/stream-consumer';
import { resolveHandlerOptions } from '../../lib/config/module-options';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import { SharedGroupRead } from '../../lib/consumer/read/shared-read';
import type { RawEntry } from '../../lib/redis/stream-roles';
import { FakeStreamsClient } from '../support/fake-streams-client';
import { MemoryLogger } from '../support/engine';
import { waitFor } from '../support/wait-for';

const S = 's';
const G = 'g';

describe('stop() past shutdownTimeoutMs', () => {
  it('acks the entries that settled, releases the unstarted ones, leaves only the one in flight pending', async () => {
    const fake = new FakeStreamsClient();
    const [first, second, third, fourth] = fake.seedJson(S, 4);
    const logger = new MemoryLogger();
    const seen: string[] = [];
    let release: () => void = () => undefined;
    const stuck = new Promise<void>((resolve) => (release = resolve));
    const consumer = new StreamConsumer({
      stream: S,
      group: G,
      consumer: 'c1',
      handlerName: 'Unit.handle',
      options: resolveHandlerOptions(S, 'unit', {}, { blockMs: 50, minIdleMs: 5000 }),
      client: fake,
      handler: {
        batch: false,
        // the second entry ignores the abort signal and outlives the shutdown timeout
        call: async (m: StreamMessage<unknown>) => {
          seen.push(m.entryId);
          if (m.entryId === second) await stuck;
        },
      },
      deadLetters: { handlerCount: 0, deliver: async () => undefined },
      logger,
    });
    consumer.start();
    await waitFor(() => seen.length === 2, { timeoutMs: 2000 });

    await consumer.stop(100);
    expect(seen).toEqual([first, second]);
    expect(fake.callsOf('ack').map((c) => c.args[2])).toEqual([[first]]);
    expect(fake.callsOf('release').map((c) => c.args)).toEqual([
      [S, G, 'c1', [third, fourth], 5000, [0, 0]],
    ]);
    expect([...fake.pel(S, G).keys()]).toEqual([second, third, fourth]);
    expect(fake.pel(S, G).get(third)!.idleMs).toBeGreaterThanOrEqual(5000);
    expect(logger.has(new RegExp(`still running after 100 ms \\(entries ${second}\\)`))).toBe(true);
    expect(consumer.snapshot().state).toBe('stopped');

    // the stuck handler finishing late changes nothing: its batch was settled by stop()
    const calls = fake.calls.length;
    release();
    await new Promise((r) => setTimeout(r, 50));
    expect(fake.calls.slice(calls).map((c) => c.method)).toEqual([]);
    expect(logger.has(/acks at shutdown failed/)).toBe(false);
  });

  it('releases the retries that wait (and the failures of the batch in hand) with their delivery counts', async () => {
    const fake = new FakeStreamsClient();
    const [early, late, inBatch, stuckId, unstarted] = fake.seedJson(S, 5);
    const logger = new MemoryLogger();
    const seen: string[] = [];
    let release: () => void = () => undefined;
    const stuck = new Promise<void>((resolve) => (release = resolve));
    const consumer = new StreamConsumer({
      stream: S,
      group: G,
      consumer: 'c1',
      handlerName: 'Unit.handle',
      options: resolveHandlerOptions(
        S,
        'unit',
        {},
        { blockMs: 50, minIdleMs: 5000, retry: { type: 'fixed', delayMs: 150 }, batchSize: 2 },
      ),
      client: fake,
      handler: {
        batch: false,
        call: async (m: StreamMessage<unknown>) => {
          seen.push(m.entryId);
          if (m.entryId === stuckId) await stuck;
          else throw new Error(`fails ${m.attempts}`);
        },
      },
      deadLetters: { handlerCount: 0, deliver: async () => undefined },
      logger,
    });
    consumer.start();
    // reads of 2: [early, late] fail and wait in the scheduler; in [inBatch, stuck] the first
    // fails and the second hangs; [unstarted] was read ahead
    await waitFor(() => seen.includes(stuckId), { timeoutMs: 2000 });
    expect(seen).toEqual([early, late, inBatch, stuckId]);

    await consumer.stop(300); // the retries are due by then (150 ms after their failure)
    const released = fake.callsOf('release').map((c) => c.args);
    // the retries: idle minIdleMs and no counts (they stay as they are); the read-ahead one: 0
    expect(released).toContainEqual([
      S,
      G,
      'c1',
      expect.arrayContaining([early, late, inBatch]),
      5000,
    ]);
    expect(released).toContainEqual([S, G, 'c1', [unstarted], 5000, [0]]);
    const pel = fake.pel(S, G);
    for (const id of [early, late, inBatch]) {
      expect(pel.get(id)).toMatchObject({ consumer: 'c1', deliveries: 1 });
      expect(pel.get(id)!.idleMs).toBeGreaterThanOrEqual(5000);
    }
    expect(pel.get(stuckId)!.idleMs).toBeLessThan(5000); // still in its handler
    expect(logger.has(/released 3 waiting retries to peers/)).toBe(true);
    expect(consumer.snapshot()).toMatchObject({ state: 'stopped', retrying: 0, totalRetries: 3 });
    release();
  });

  it('a read that reaches the loop after stop(0) gave up (a shared round ending late) is released, never left pending unseen', async () => {
    // a partition loop whose lease is lost stops at once (timeout 0) while parked in the shared
    // read; the round it was in may still bring entries for it
    const fake = new FakeStreamsClient();
    fake.seedGroup(S, G);
    const readLink = new FakeStreamsClient();
    readLink.seedGroup(S, G);
    let answer: (replies: Map<string, RawEntry[]>) => void = () => undefined;
    readLink.overrides.readGroups = () =>
      new Promise<Map<string, RawEntry[]>>((resolve) => (answer = resolve));
    const shared = new SharedGroupRead({ client: readLink, group: G, consumer: 'c1' });
    const reader = shared.member(S);
    const seen: string[] = [];
    const consumer = new StreamConsumer({
      stream: S,
      group: G,
      consumer: 'c1',
      handlerName: 'Unit.handle',
      options: resolveHandlerOptions(S, 'unit', {}, { blockMs: 5000, minIdleMs: 5000 }),
      client: fake,
      ownsClient: false,
      reader,
      handler: { batch: false, call: (m: StreamMessage<unknown>) => void seen.push(m.entryId) },
      deadLetters: { handlerCount: 0, deliver: async () => undefined },
      logger: new MemoryLogger(),
    });
    consumer.start();
    await waitFor(() => readLink.callsOf('readGroups').length === 1, { timeoutMs: 2000 });
    await consumer.stop(0);
    expect(consumer.snapshot().state).toBe('stopped');
    // the round ends now, with two entries the server handed to this consumer
    const ids = fake.seedJson(S, 2, 'late');
    fake.deliverTo(S, G, 'c1', 2);
    answer(new Map([[S, fake.entries(S).map((e) => ({ entryId: e.entryId, fields: e.fields }))]]));
    await reader.leave();
    await waitFor(() => fake.callsOf('release').length === 1, { timeoutMs: 2000 });
    expect(seen).toEqual([]);
    expect(fake.callsOf('release')[0].args).toEqual([S, G, 'c1', ids, 5000, [0, 0]]);
    // pending still (the server's PEL), but idle past minIdleMs: the next owner's sweep takes them
    for (const id of ids) expect(fake.pel(S, G).get(id)!.idleMs).toBeGreaterThanOrEqual(5000);
    // and the shared connection is not the stopped loop's to close
    expect(readLink.closed).toBe(false);
    expect(fake.closed).toBe(false);
    await shared.close();
  });
});
