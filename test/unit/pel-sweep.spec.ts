/** Reading pending entries (lib/consumer/recover/pel-sweep.ts): own PEL drain, poison sweep, reclaim. */
import type { DeadLetterReason } from '../../lib/interfaces/dead-letter-message.interface';
import type { DeadLetterCandidate } from '../../lib/consumer/context/loop-context';
import { PelSweep } from '../../lib/consumer/recover/pel-sweep';
import { NO_RATE_LIMIT } from '../../lib/consumer/limits/rate-limiter';
import type { StreamHandlerOptions } from '../../lib/interfaces/stream-handler-options.interface';
import type { RawEntry } from '../../lib/redis/streams-client';
import { FakeStreamsClient } from '../support/fake-streams-client';
import { C, G, S, testLoop } from '../support/loop-context';

function setUp(options: Partial<StreamHandlerOptions> = {}) {
  const loop = testLoop({ batchSize: 2, minIdleMs: 1000, maxDeliveries: 3, ...options });
  const fake = new FakeStreamsClient();
  fake.seedGroup(S, G);
  const steps: string[] = [];
  const processed: Array<{ ids: string[]; counts: Map<string, number> | null }> = [];
  const dead: Array<{ reason: DeadLetterReason; letters: DeadLetterCandidate[] }> = [];
  const sweep = new PelSweep(loop.context, {
    client: fake,
    delivery: {
      process: async (entries: readonly RawEntry[], counts: Map<string, number> | null) => {
        steps.push(`process ${entries.map((e) => e.entryId).join(',')}`);
        processed.push({ ids: entries.map((e) => e.entryId), counts });
        // the delivery settles them: the test acks them as a handler that returned would
        await fake.ack(
          S,
          G,
          entries.map((e) => e.entryId),
        );
      },
    },
    acks: { flush: async () => void steps.push('flush') },
    settlement: {
      deleted: async (ids) => void steps.push(`deleted ${ids.join(',')}`),
      gone: async (ids) => void steps.push(`gone ${ids.join(',')}`),
      deadLetter: async (letters, reason) => {
        dead.push({ reason, letters: [...letters] });
        await fake.ack(
          S,
          G,
          letters.map((l) => l.entryId),
        );
      },
    },
    limiter: NO_RATE_LIMIT,
  });
  return { loop, fake, sweep, steps, processed, dead };
}

describe('PelSweep.drainOwn', () => {
  it('reads the own PEL from 0 in batches with their delivery counts, flushing acks after each', async () => {
    const { fake, sweep, steps, processed } = setUp();
    fake.seedJson(S, 3);
    const ids = fake.deliverTo(S, G, C, 3);
    fake.seedJson(S, 1, 'peer');
    fake.deliverTo(S, G, 'peer', 1);
    await sweep.drainOwn();
    expect(steps).toEqual([`process ${ids[0]},${ids[1]}`, 'flush', `process ${ids[2]}`, 'flush']);
    // the drain's read is a delivery too: 2 each
    expect(processed.map((p) => [...p.counts!.values()])).toEqual([[2, 2], [2]]);
    expect(fake.callsOf('readGroup').map((c) => c.args[4])).toEqual(['0', ids[1], ids[2]]);
  });

  it('does nothing once the loop stops', async () => {
    const { loop, fake, sweep } = setUp();
    loop.stop();
    await sweep.drainOwn();
    expect(fake.calls).toEqual([]);
  });
});

describe('PelSweep.sweep', () => {
  it('an empty PEL costs one XPENDING summary', async () => {
    const { fake, sweep } = setUp();
    expect(await sweep.sweep()).toBe(0);
    expect(fake.calls.map((c) => c.method)).toEqual(['pendingCount']);
  });

  it('dead-letters poison pills idle past minIdleMs (claimed first), then reclaims the other idle entries', async () => {
    const { fake, sweep, steps, processed, dead } = setUp();
    fake.seedJson(S, 3);
    const ids = fake.deliverTo(S, G, 'dead-peer', 3);
    fake.age(S, G, 2000);
    // the first one was delivered 3 times already: a poison pill
    const pel = fake.pel(S, G);
    expect(pel.get(ids[0])!.deliveries).toBe(1);
    await fake.claim(S, G, 'dead-peer', 0, [ids[0]]);
    await fake.claim(S, G, 'dead-peer', 0, [ids[0]]);
    fake.age(S, G, 2000);
    fake.calls.length = 0;
    expect(await sweep.sweep()).toBe(3);
    expect(dead).toEqual([
      {
        reason: 'max_deliveries',
        letters: [
          { entryId: ids[0], fields: fake.entries(S)[0].fields, attempts: 3, error: undefined },
        ],
      },
    ]);
    expect(fake.callsOf('claim')[0].args).toEqual([S, G, C, 1000, [ids[0]]]);
    expect(processed.map((p) => p.ids)).toEqual([[ids[1], ids[2]]]);
    expect(steps).toEqual([`process ${ids[1]},${ids[2]}`, 'flush']);
    expect(fake.pel(S, G).size).toBe(0);
  });

  it('leaves entries that are not idle long enough; settles reclaimed ids deleted from the stream', async () => {
    const { fake, sweep, steps, processed } = setUp();
    fake.seedJson(S, 2);
    const ids = fake.deliverTo(S, G, 'dead-peer', 2);
    fake.age(S, G, 2000);
    fake.deleteEntries(S, [ids[0]]);
    fake.seedJson(S, 1, 'busy');
    const [busy] = fake.deliverTo(S, G, 'live-peer', 1);
    await sweep.sweep();
    expect(steps).toEqual([`deleted ${ids[0]}`, `process ${ids[1]}`, 'flush']);
    expect(processed[0].ids).toEqual([ids[1]]);
    expect(fake.pel(S, G).get(busy)!.consumer).toBe('live-peer');
  });

  it('maxClaimPasses caps the XAUTOCLAIM pages of one sweep', async () => {
    const { fake, sweep } = setUp({ maxClaimPasses: 1 });
    fake.seedJson(S, 5);
    fake.deliverTo(S, G, 'dead-peer', 5);
    fake.age(S, G, 2000);
    await sweep.sweep();
    expect(fake.callsOf('autoClaim')).toHaveLength(1);
    expect(fake.pel(S, G).size).toBe(3);
  });
});
