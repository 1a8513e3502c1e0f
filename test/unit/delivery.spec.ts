/** Handling one read and settling it (lib/consumer/handle/delivery.ts), on the in-memory client. */
import { AckWriter } from '../../lib/consumer/settle/ack-writer';
import { AckBuffer } from '../../lib/consumer/settle/ack-buffer';
import { AckRecords } from '../../lib/consumer/settle/ack-records';
import type { EntryHandler, EntryTracing } from '../../lib/consumer/context/consumer-config';
import { DeadLetterPath } from '../../lib/consumer/settle/dead-letter-path';
import { Checkpoints } from '../../lib/consumer/handle/checkpoints';
import { Delivery, type InHand } from '../../lib/consumer/handle/delivery';
import { HandlerRunner } from '../../lib/consumer/handle/handler-runner';
import { Heartbeat } from '../../lib/consumer/health/heartbeat';
import { NO_RATE_LIMIT } from '../../lib/consumer/limits/rate-limiter';
import { RetryScheduler } from '../../lib/consumer/retry/retry-scheduler';
import { Settlement } from '../../lib/consumer/settle/settlement';
import { SkipFilter } from '../../lib/consumer/skip/skip-filter';
import { skipRulesOf, type SkipRules } from '../../lib/consumer/skip/skip-rules';
import type { StreamHandlerOptions } from '../../lib/interfaces/stream-handler-options.interface';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import { FakeStreamsClient } from '../support/fake-streams-client';
import { C, G, S, testLoop } from '../support/loop-context';

const DLQ = 'orders:dlq';

function setUp(
  call: (m: StreamMessage<unknown>) => unknown,
  options: Partial<StreamHandlerOptions> = {},
  tracing?: EntryTracing,
  skipRules?: SkipRules,
) {
  const loop = testLoop({ deadLetterStream: DLQ, maxDeliveries: 3, ...options });
  const fake = new FakeStreamsClient();
  fake.seedGroup(S, G);
  const handler: EntryHandler = { batch: false, call };
  const runner = new HandlerRunner(loop.context, handler);
  const heartbeat = new Heartbeat(loop.context, fake);
  const scheduler = new RetryScheduler(loop.context);
  const records = skipRules ? new AckRecords(skipRules) : undefined;
  const acks = new AckBuffer(loop.context, new AckWriter(loop.context, fake), runner, { records });
  const settlement = new Settlement(loop.context, {
    client: fake,
    acks: new AckWriter(loop.context, fake),
    deadLetters: new DeadLetterPath(
      loop.context,
      fake,
      { handlerCount: 0, deliver: async () => undefined },
      new AckWriter(loop.context, fake),
    ),
    heartbeat,
    waitingRetries: scheduler,
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
    waitingRetries: scheduler,
    pace: { delivered: () => void delivered++ },
    heartbeat,
    health: { drainNeeded: () => void drains++ },
    tracing,
    skips:
      skipRules && records ? new SkipFilter(loop.context, fake, skipRules, records) : undefined,
    records,
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
    const acks = new AckBuffer(loop.context, new AckWriter(loop.context, fake), runner);
    const recorded: string[][] = [];
    fake.seedJson(S, 3);
    const entries = await fake.readGroup(S, G, C, 10, '>');
    const skipId = entries[1].entryId;
    const delivery = new Delivery(loop.context, {
      checkpoints: new Checkpoints(loop.context, undefined),
      runner,
      settlement: new Settlement(loop.context, {
        client: fake,
        acks: new AckWriter(loop.context, fake),
        deadLetters: new DeadLetterPath(
          loop.context,
          fake,
          { handlerCount: 0, deliver: async () => undefined },
          new AckWriter(loop.context, fake),
        ),
        heartbeat,
        waitingRetries: scheduler,
        errors: runner,
      }),
      acks,
      limiter: NO_RATE_LIMIT,
      waitingRetries: scheduler,
      pace: { delivered: () => undefined },
      heartbeat,
      health: { drainNeeded: () => undefined },
      skips: {
        lookUp: (messages) => ({
          verdicts: async () => ({
            run: messages.flatMap((m, i) => (m.entryId === skipId ? [] : [i])),
            skipped: [skipId],
          }),
          drop: () => undefined,
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

  it('prepare: a read sent ahead is looked up as it lands; handled after the batch before, the copy of an entry of that batch is skipped', async () => {
    const seen: string[] = [];
    const rules = skipRulesOf({ dedup: true, newerWins: null }) as SkipRules;
    const { fake, acks, delivery, loop } = setUp((m) => void seen.push(m.id), {}, undefined, rules);
    fake.seed(S, ['id', 'order-1', 'data', '{}']);
    fake.seed(S, ['id', 'order-2', 'data', '{}']);
    fake.seed(S, ['id', 'order-1', 'data', '{}']); // a copy, in the read sent ahead
    fake.seed(S, ['id', 'order-3', 'data', '{}']);
    const batch = await fake.readGroup(S, G, C, 2, '>');
    const ahead = await fake.readGroup(S, G, C, 2, '>');
    delivery.prepare(ahead); // its reply landed while `batch` waits for its handler
    expect(fake.callsOf('readRecords').map((c) => c.args[2])).toEqual([
      [
        { kind: 'acked', id: 'order-1' },
        { kind: 'acked', id: 'order-3' },
      ],
    ]);
    await delivery.process(batch, null); // order-1 handled
    expect(fake.callsOf('readRecords')).toHaveLength(2); // and the batch's own look-up
    await acks.flush(); // the batch's XACK, after the look-up of the read ahead
    await delivery.process(ahead, null); // the loop's own record of order-1 skips the copy
    expect(fake.callsOf('readRecords')).toHaveLength(2); // nothing more asked
    expect(seen).toEqual(['order-1', 'order-2', 'order-3']);
    expect(loop.counters.snapshot().totalDuplicates).toBe(1);
  });

  it("prepare: the loop's own records skip the copy whose twin's XACK was not sent", async () => {
    const seen: string[] = [];
    const rules = skipRulesOf({ dedup: true, newerWins: null }) as SkipRules;
    const { fake, acks, delivery } = setUp((m) => void seen.push(m.id), {}, undefined, rules);
    fake.seed(S, ['id', 'order-1', 'data', '{}']);
    fake.seed(S, ['id', 'order-1', 'data', '{}']);
    const batch = await fake.readGroup(S, G, C, 1, '>');
    const ahead = await fake.readGroup(S, G, C, 1, '>');
    delivery.prepare(ahead);
    await delivery.process(batch, null);
    await delivery.process(ahead, null); // say, settled before a sweep: no XACK in between
    expect(fake.callsOf('readRecords')).toHaveLength(2);
    expect(fake.callsOf('ackRecording')).toEqual([]);
    expect(seen).toEqual(['order-1']);
    expect(acks.take()).toHaveLength(2);
  });

  it('prepare: the reads sent ahead land before the one taken is handled; each keeps its own look-up, a fourth makes the oldest go', async () => {
    const rules = skipRulesOf({ dedup: true, newerWins: null }) as SkipRules;
    const { fake, delivery } = setUp(() => undefined, {}, undefined, rules);
    fake.seedJson(S, 20);
    const first = await fake.readGroup(S, G, C, 2, '>');
    const second = await fake.readGroup(S, G, C, 2, '>');
    const third = await fake.readGroup(S, G, C, 2, '>');
    delivery.prepare(first);
    delivery.prepare(second); // lands before `first` is handled
    await delivery.process(first, null);
    await delivery.process(second, null);
    expect(fake.callsOf('readRecords')).toHaveLength(2); // one each, as they landed
    delivery.prepare(third);
    delivery.prepare(await fake.readGroup(S, G, C, 2, '>'));
    delivery.prepare(await fake.readGroup(S, G, C, 2, '>')); // two sent ahead of `third`
    expect(fake.callsOf('readRecords')).toHaveLength(5);
    await delivery.process(third, null);
    expect(fake.callsOf('readRecords')).toHaveLength(5); // its own look-up was kept
    const fourth = await fake.readGroup(S, G, C, 2, '>');
    delivery.prepare(fourth);
    delivery.prepare(await fake.readGroup(S, G, C, 2, '>'));
    delivery.prepare(await fake.readGroup(S, G, C, 2, '>'));
    delivery.prepare(await fake.readGroup(S, G, C, 2, '>')); // `fourth` makes way
    expect(fake.callsOf('readRecords')).toHaveLength(9);
    await delivery.process(fourth, null);
    expect(fake.callsOf('readRecords')).toHaveLength(10); // looked up again, on its own
  });

  it('prepare does nothing without a skip filter, and a read other than the prepared one is looked up on its own', async () => {
    const plain = setUp(() => undefined);
    plain.fake.seedJson(S, 2);
    plain.delivery.prepare(await plain.fake.readGroup(S, G, C, 2, '>'));
    expect(plain.fake.callsOf('readRecords')).toEqual([]);

    const rules = skipRulesOf({ dedup: true, newerWins: null }) as SkipRules;
    const { fake, delivery } = setUp(() => undefined, {}, undefined, rules);
    fake.seedJson(S, 4);
    const ahead = await fake.readGroup(S, G, C, 2, '>');
    delivery.prepare(ahead);
    const other = await fake.readGroup(S, G, C, 2, '>'); // say, due retries claimed first
    expect(fake.callsOf('readRecords')).toHaveLength(1); // the prepared read's, as it landed
    await delivery.process(other, null);
    expect(fake.callsOf('readRecords')).toHaveLength(2); // the other read's, on its own
    await delivery.process(ahead, null);
    expect(fake.callsOf('readRecords')).toHaveLength(2); // the prepared one's answer
  });
});
