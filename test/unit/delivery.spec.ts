/** Handling one read and settling it (lib/consumer/delivery.ts), on the in-memory client. */
import { AckBuffer } from '../../lib/consumer/ack-buffer';
import type { EntryHandler, EntryTracing } from '../../lib/consumer/consumer.types';
import { DeadLetterPath } from '../../lib/consumer/dead-letter-path';
import { Checkpoints } from '../../lib/consumer/checkpoints';
import { Delivery, type InHand } from '../../lib/consumer/delivery';
import { HandlerRunner } from '../../lib/consumer/handler-runner';
import { Heartbeat } from '../../lib/consumer/heartbeat';
import { NO_RATE_LIMIT } from '../../lib/consumer/rate-limiter';
import { RetryScheduler } from '../../lib/consumer/retry-scheduler';
import { Settlement } from '../../lib/consumer/settlement';
import type { StreamHandlerOptions } from '../../lib/interfaces/stream-handler-options.interface';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import { FakeStreamsClient } from '../support/fake-streams-client';
import { C, G, S, testLoop } from '../support/loop-context';

const DLQ = 'orders:dlq';

function setUp(
  call: (m: StreamMessage<unknown>) => unknown,
  options: Partial<StreamHandlerOptions> = {},
  tracing?: EntryTracing,
) {
  const loop = testLoop({ deadLetterStream: DLQ, maxDeliveries: 3, ...options });
  const fake = new FakeStreamsClient();
  fake.seedGroup(S, G);
  const handler: EntryHandler = { batch: false, call };
  const runner = new HandlerRunner(loop.context, handler);
  const heartbeat = new Heartbeat(loop.context, fake);
  const scheduler = new RetryScheduler(loop.context);
  const acks = new AckBuffer(loop.context, fake, runner);
  const settlement = new Settlement(loop.context, {
    client: fake,
    deadLetters: new DeadLetterPath(loop.context, fake, {
      handlerCount: 0,
      deliver: async () => undefined,
    }),
    heartbeat,
    retries: scheduler,
    errors: runner,
  });
  let drains = 0;
  let delivered = 0;
  const delivery = new Delivery(loop.context, {
    runner,
    settlement,
    acks,
    checkpoints: new Checkpoints(loop.context, undefined),
    limiter: NO_RATE_LIMIT,
    retries: scheduler,
    pace: { delivered: () => void delivered++ },
    heartbeat,
    health: { drainNeeded: () => void drains++ },
    tracing,
  });
  return {
    loop,
    fake,
    acks,
    scheduler,
    delivery,
    drains: () => drains,
    delivered: () => delivered,
  };
}

describe('Delivery', () => {
  it('handled entries wait in the ack buffer (not acked yet); the read is counted', async () => {
    const seen: string[] = [];
    const { loop, fake, acks, delivery, delivered } = setUp((m) => void seen.push(m.entryId));
    fake.seedJson(S, 3);
    const entries = await fake.readGroup(S, G, C, 10, '>');
    await delivery.process(entries, null);
    expect(seen).toEqual(entries.map((e) => e.entryId));
    expect(fake.pel(S, G).size).toBe(3); // still pending: the ack goes out with the next read
    expect(acks.take()).toEqual(entries.map((e) => e.entryId));
    expect(loop.counters.snapshot().totalRead).toBe(3);
    expect(delivered()).toBe(1);
  });

  it('deleted are acked, undecodable and poison dead-lettered, failures wait for a retry', async () => {
    const { loop, fake, acks, scheduler, delivery } = setUp((m) => {
      if (m.entryId === ids[3]) throw new Error('flaky');
    });
    fake.seedJson(S, 1);
    fake.seed(S, ['id', 'bad', 'data', '{oops']);
    fake.seedJson(S, 2, 'more');
    const ids = fake.deliverTo(S, G, C, 4);
    fake.deleteEntries(S, [ids[0]]);
    const entries = await fake.readGroup(S, G, C, 10, '0');
    const counts = new Map([
      [ids[1], 1],
      [ids[2], 4],
      [ids[3], 1],
    ]);
    await delivery.process(entries, counts);
    expect(fake.entries(DLQ).map((e) => e.fields[e.fields.indexOf('dlq_reason') + 1])).toEqual([
      'decode_error',
      'max_deliveries',
    ]);
    expect(scheduler.has(ids[3])).toBe(true);
    expect([...fake.pel(S, G).keys()]).toEqual([ids[3]]);
    expect(acks.take()).toEqual([]);
    expect(loop.counters.snapshot()).toMatchObject({
      totalDeleted: 1,
      totalDlq: 2,
      totalRetries: 1,
    });
  });

  it('a waiting retry read again is uncharged and not handled', async () => {
    const seen: string[] = [];
    const { fake, scheduler, delivery } = setUp((m) => {
      seen.push(m.entryId);
      throw new Error('x');
    });
    fake.seedJson(S, 1);
    const first = await fake.readGroup(S, G, C, 10, '>');
    await delivery.process(first, null);
    expect(scheduler.has(first[0].entryId)).toBe(true);
    const again = await fake.readGroup(S, G, C, 10, '0'); // a drain of the own PEL
    await delivery.process(again, new Map([[first[0].entryId, 2]]));
    expect(seen).toEqual([first[0].entryId]);
    expect(fake.pel(S, G).get(first[0].entryId)).toMatchObject({ consumer: C, deliveries: 1 });
  });

  it('the batch in hand is visible while it runs; a stop leaves the unstarted released to peers', async () => {
    let during: InHand | null = null;
    const { loop, fake, delivery } = setUp(
      (m) => {
        during = delivery.inHand;
        if (m.entryId === fake.entries(S)[0].entryId) loop.stop();
      },
      { concurrency: 1 },
    );
    fake.seedJson(S, 3);
    const entries = await fake.readGroup(S, G, C, 10, '>');
    await delivery.process(entries, null);
    expect(during!.batch.ids).toEqual(entries.map((e) => e.entryId));
    expect(delivery.inHand).toBeNull();
    expect(fake.callsOf('release').map((c) => c.args[3])).toEqual([
      entries.slice(1).map((e) => e.entryId),
    ]);
  });

  it('an abandoned batch is not settled by the loop (stop() did it)', async () => {
    const { loop, fake, acks, delivery } = setUp(() => loop.abandon());
    fake.seedJson(S, 2);
    await delivery.process(await fake.readGroup(S, G, C, 10, '>'), null);
    expect(acks.take()).toEqual([]);
    expect(fake.callsOf('release')).toEqual([]);
  });

  it('a settle that fails asks for a drain of the own PEL and throws', async () => {
    const { fake, delivery, drains } = setUp(() => undefined);
    fake.seedJson(S, 1);
    const [entry] = await fake.readGroup(S, G, C, 10, '>');
    fake.fail('ack');
    await expect(
      delivery.process([{ entryId: entry.entryId, fields: null }], null),
    ).rejects.toThrow(/injected ack failure/);
    expect(drains()).toBe(1);
  });

  it('hands each message and its raw fields to tracing before the handler runs', async () => {
    const remembered: string[] = [];
    const tracing: EntryTracing = {
      remember: (m, fields) => void remembered.push(`${m.entryId}:${fields[1]}`),
      wrap: (h) => h,
    };
    const order: string[] = [];
    const { fake, delivery } = setUp((m) => void order.push(`handle ${m.entryId}`), {}, tracing);
    fake.seedJson(S, 2);
    const entries = await fake.readGroup(S, G, C, 10, '>');
    await delivery.process(entries, null);
    expect(remembered).toEqual(entries.map((e, i) => `${e.entryId}:evt-${i}`));
  });

  it('with a skip filter: skipped entries go to the acks unhandled; handled ones get their records', async () => {
    const seen: string[] = [];
    const loop = testLoop({ deadLetterStream: DLQ });
    const fake = new FakeStreamsClient();
    fake.seedGroup(S, G);
    const runner = new HandlerRunner(loop.context, {
      batch: false,
      call: (m) => void seen.push(m.entryId),
    });
    const heartbeat = new Heartbeat(loop.context, fake);
    const scheduler = new RetryScheduler(loop.context);
    const acks = new AckBuffer(loop.context, fake, runner);
    const recorded: string[][] = [];
    fake.seedJson(S, 3);
    const entries = await fake.readGroup(S, G, C, 10, '>');
    const skipId = entries[1].entryId;
    const delivery = new Delivery(loop.context, {
      checkpoints: new Checkpoints(loop.context, undefined),
      runner,
      settlement: new Settlement(loop.context, {
        client: fake,
        deadLetters: new DeadLetterPath(loop.context, fake, {
          handlerCount: 0,
          deliver: async () => undefined,
        }),
        heartbeat,
        retries: scheduler,
        errors: runner,
      }),
      acks,
      limiter: NO_RATE_LIMIT,
      retries: scheduler,
      pace: { delivered: () => undefined },
      heartbeat,
      health: { drainNeeded: () => undefined },
      skips: {
        filter: async (messages) => ({
          run: messages.flatMap((m, i) => (m.entryId === skipId ? [] : [i])),
          skipped: [skipId],
        }),
      },
      records: { handled: (_messages, ok) => void recorded.push([...ok]) },
    });
    await delivery.process(entries, null);
    const handled = [entries[0].entryId, entries[2].entryId];
    expect(seen).toEqual(handled);
    expect(recorded).toEqual([handled]);
    expect(acks.take().sort()).toEqual(entries.map((e) => e.entryId).sort());
  });
});
