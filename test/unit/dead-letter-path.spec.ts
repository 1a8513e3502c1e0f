/** The dead-letter path (lib/consumer/settle/dead-letter-path.ts): copy, @DeadLetter methods, XACK. */
import { AckWriter } from '../../lib/consumer/settle/ack-writer';
import type { DeadLetterSink } from '../../lib/consumer/context/consumer-config';
import { DeadLetterPath } from '../../lib/consumer/settle/dead-letter-path';
import type { DeadLetterCandidate } from '../../lib/consumer/context/loop-context';
import type { StreamHandlerOptions } from '../../lib/interfaces/stream-handler-options.interface';
import type { DeadLetterMessage } from '../../lib/interfaces/dead-letter-message.interface';
import { FakeStreamsClient } from '../support/fake-streams-client';
import { C, G, S, manualClock, testLoop } from '../support/loop-context';

const DLQ = 'orders:dlq';

function setUp(
  options: Partial<StreamHandlerOptions> = { deadLetterStream: DLQ },
  deliver: (letter: DeadLetterMessage) => Promise<void> = async () => undefined,
  handlerCount = 1,
) {
  const clock = manualClock(Date.UTC(2026, 0, 2, 3, 4, 5));
  const loop = testLoop(options, clock.now);
  const fake = new FakeStreamsClient();
  fake.seedJson(S, 3);
  const ids = fake.deliverTo(S, G, C, 3);
  const letters: DeadLetterMessage[] = [];
  const sink: DeadLetterSink = {
    handlerCount,
    deliver: async (letter) => {
      letters.push(letter);
      await deliver(letter);
    },
  };
  const path = new DeadLetterPath(loop.context, fake, sink, new AckWriter(loop.context, fake));
  const candidate = (id: string, error?: string): DeadLetterCandidate => ({
    entryId: id,
    fields: fake.entries(S).find((e) => e.entryId === id)!.fields,
    attempts: 5,
    error,
  });
  return { loop, fake, ids, letters, path, candidate };
}

describe('DeadLetterPath', () => {
  it('copies the entry with its dlq_* fields, calls @DeadLetter, then acks and counts it', async () => {
    const { loop, fake, ids, letters, path, candidate } = setUp();
    const done = await path.send([candidate(ids[0], 'boom')], 'max_deliveries');
    expect(done).toEqual([ids[0]]);
    const [copy] = fake.entries(DLQ);
    expect(copy.fields).toEqual([
      ...candidate(ids[0]).fields,
      'dlq_reason',
      'max_deliveries',
      'dlq_stream',
      S,
      'dlq_group',
      G,
      'dlq_entry_id',
      ids[0],
      'dlq_attempts',
      '5',
      'dlq_error',
      'boom',
      'dlq_at',
      '2026-01-02T03:04:05.000Z',
    ]);
    expect(letters).toEqual([
      {
        reason: 'max_deliveries',
        stream: S,
        group: G,
        consumer: C,
        entryId: ids[0],
        id: 'evt-0',
        attempts: 5,
        fields: { id: 'evt-0', data: '{"i":0}' },
        error: 'boom',
      },
    ]);
    // order: the owner check (a touch), the copy, then the ack
    expect(fake.calls.map((c) => c.method)).toEqual(['touch', 'add', 'ack']);
    expect(fake.pel(S, G).has(ids[0])).toBe(false);
    expect(loop.counters.snapshot().totalDlq).toBe(1);
  });

  it('a batch: the copies go out together, in order, before any ack; with no @DeadLetter method one XACK settles them', async () => {
    const { loop, fake, ids, path, candidate } = setUp({ deadLetterStream: DLQ }, undefined, 0);
    const done = await path.send(
      ids.map((id) => candidate(id)),
      'max_deliveries',
    );
    expect(done).toEqual(ids);
    expect(fake.calls.map((c) => c.method)).toEqual(['touch', 'add', 'add', 'add', 'ack']);
    expect(fake.callsOf('ack')[0].args[2]).toEqual(ids);
    expect(fake.entries(DLQ).map((e) => e.fields[e.fields.indexOf('dlq_entry_id') + 1])).toEqual(
      ids,
    );
    expect(fake.pel(S, G).size).toBe(0);
    expect(loop.counters.snapshot().totalDlq).toBe(3);
  });

  it('a batch with @DeadLetter methods goes one entry at a time: copy, methods, XACK', async () => {
    const order: string[] = [];
    const { fake, ids, path, candidate } = setUp({ deadLetterStream: DLQ }, async (letter) => {
      order.push(`handler ${letter.entryId} (acked before: ${fake.callsOf('ack').length})`);
    });
    expect(await path.send([candidate(ids[0]), candidate(ids[1])], 'rejected')).toEqual([
      ids[0],
      ids[1],
    ]);
    expect(fake.calls.map((c) => c.method)).toEqual(['touch', 'add', 'ack', 'touch', 'add', 'ack']);
    expect(order).toEqual([
      `handler ${ids[0]} (acked before: 0)`,
      `handler ${ids[1]} (acked before: 1)`,
    ]);
  });

  it('a copy that fails in a batch leaves that entry pending, named in the error; the others are settled', async () => {
    const { loop, fake, ids, path, candidate } = setUp({ deadLetterStream: DLQ }, undefined, 0);
    fake.fail('add', {
      error: new Error('OOM command not allowed'),
      when: (args) => (args[1] as string[]).includes(ids[1]),
    });
    const done = await path.send(
      ids.map((id) => candidate(id)),
      'max_deliveries',
    );
    expect(done).toEqual([ids[0], ids[2]]);
    expect([...fake.pel(S, G).keys()]).toEqual([ids[1]]);
    expect(
      loop.logger.has(
        new RegExp(
          `Dead-letter path failed for T\\.h orders/g entry ${ids[1]} \\(max_deliveries\\); it stays pending and is retried: OOM`,
        ),
      ),
    ).toBe(true);
    // the retry copies only the one that failed
    expect(await path.send([candidate(ids[1])], 'max_deliveries')).toEqual([ids[1]]);
    expect(fake.entries(DLQ)).toHaveLength(3);
  });

  it('an entry a peer took over (this process froze past minIdleMs) is left to it: no copy, no method, no ack here', async () => {
    const { loop, fake, ids, letters, path, candidate } = setUp();
    fake.hold(S, G, 'peer', [ids[1]]);
    const done = await path.send(
      ids.map((id) => candidate(id)),
      'max_deliveries',
    );
    expect(done).toEqual([ids[0], ids[2]]);
    expect(letters.map((l) => l.entryId)).toEqual([ids[0], ids[2]]);
    expect(fake.entries(DLQ).map((e) => e.fields[e.fields.indexOf('dlq_entry_id') + 1])).toEqual([
      ids[0],
      ids[2],
    ]);
    expect(fake.pel(S, G).get(ids[1])?.consumer).toBe('peer');
    expect(
      loop.logger.has(
        new RegExp(
          `Not dead-lettering \\(max_deliveries\\) T\\.h orders/g entries ${ids[1]}: no longer`,
        ),
      ),
    ).toBe(true);
  });

  it('a failed owner check leaves the step pending, named in the error, and copies nothing', async () => {
    const { loop, fake, ids, path, candidate } = setUp({ deadLetterStream: DLQ }, undefined, 0);
    fake.fail('touch');
    expect(await path.send([candidate(ids[0]), candidate(ids[1])], 'max_deliveries')).toEqual([]);
    expect(fake.callsOf('add')).toEqual([]);
    expect(fake.pel(S, G).size).toBe(3);
    expect(
      loop.logger.has(
        new RegExp(`Dead-letter path failed for T\\.h orders/g entries ${ids[0]}, ${ids[1]}`),
      ),
    ).toBe(true);
  });

  it('a failing @DeadLetter method leaves the entry pending; the retry does not copy it twice', async () => {
    let fail = true;
    const { loop, fake, ids, path, candidate } = setUp({ deadLetterStream: DLQ }, async () => {
      if (fail) throw new Error('sink down');
    });
    expect(await path.send([candidate(ids[0])], 'decode_error')).toEqual([]);
    expect(fake.pel(S, G).has(ids[0])).toBe(true);
    expect(loop.counters.snapshot()).toMatchObject({ totalDlq: 0, lastError: 'sink down' });
    expect(
      loop.logger.has(/Dead-letter path failed for T\.h orders\/g entry .* stays pending/),
    ).toBe(true);
    fail = false;
    expect(await path.send([candidate(ids[0])], 'decode_error')).toEqual([ids[0]]);
    expect(fake.entries(DLQ)).toHaveLength(1);
  });

  it('with no dead-letter stream and no @DeadLetter method the entry is dropped: warned and acked', async () => {
    const { loop, fake, ids, path, candidate } = setUp({ deadLetterStream: false }, undefined, 0);
    expect(await path.send([candidate(ids[1])], 'max_deliveries')).toEqual([ids[1]]);
    expect(fake.callsOf('add')).toEqual([]);
    expect(fake.pel(S, G).has(ids[1])).toBe(false);
    expect(loop.logger.has(/warn Dropping max_deliveries entry .*attempts 5/)).toBe(true);
  });

  it('once the loop stops no entry starts down the path; once abandoned no @DeadLetter call is made', async () => {
    const stopped = setUp();
    stopped.loop.stop();
    expect(await stopped.path.send([stopped.candidate(stopped.ids[0])], 'rejected')).toEqual([]);
    expect(stopped.fake.calls).toEqual([]);

    const abandoned = setUp();
    abandoned.loop.abandon();
    const { path, candidate, ids, fake, letters } = abandoned;
    expect(await path.send([candidate(ids[0])], 'rejected')).toEqual([]);
    expect(fake.entries(DLQ)).toHaveLength(1); // copied; it stays pending, the copy is not undone
    expect(letters).toEqual([]);
    expect(fake.pel(S, G).has(ids[0])).toBe(true);
  });

  it('says which entry is on the path and at which step while it runs', async () => {
    let seen: unknown;
    const { path, ids, candidate } = setUp({ deadLetterStream: DLQ }, async () => {
      seen = path.inFlight;
    });
    await path.send([candidate(ids[2])], 'max_deliveries');
    expect(seen).toEqual({ entryIds: [ids[2]], step: 'handlers' });
    expect(path.inFlight).toBeUndefined();
  });

  it("on a partition loop: the letter names the partitioned stream, its partition and key; the ack goes to the partition's stream", async () => {
    const clock = manualClock(Date.UTC(2026, 0, 2, 3, 4, 5));
    const loop = testLoop({ deadLetterStream: DLQ }, clock.now);
    const partitionStream = `${S}:p:3`;
    const context = {
      ...loop.context,
      stream: partitionStream,
      partition: { index: 3, generation: 2 },
    };
    const fake = new FakeStreamsClient();
    const keyed = fake.seed(partitionStream, ['id', 'evt-k', 'data', '{"i":1}', 'pkey', 'acct-7']);
    const unkeyed = fake.seed(partitionStream, ['id', 'evt-u', 'data', '{"i":2}']);
    fake.seedGroup(partitionStream, G);
    fake.deliverTo(partitionStream, G, C, 2);
    const letters: DeadLetterMessage[] = [];
    const sink: DeadLetterSink = { handlerCount: 1, deliver: async (l) => void letters.push(l) };
    const path = new DeadLetterPath(context, fake, sink, new AckWriter(context, fake));
    const fieldsOf = (id: string) =>
      fake.entries(partitionStream).find((e) => e.entryId === id)!.fields;
    const done = await path.send(
      [
        { entryId: keyed, fields: fieldsOf(keyed), attempts: 3, error: 'boom' },
        { entryId: unkeyed, fields: fieldsOf(unkeyed), attempts: 3, error: undefined },
      ],
      'max_deliveries',
    );
    expect(done).toEqual([keyed, unkeyed]);
    const [first, second] = fake.entries(DLQ);
    expect(first.fields).toEqual([
      ...fieldsOf(keyed),
      'dlq_reason',
      'max_deliveries',
      'dlq_stream',
      S,
      'dlq_group',
      G,
      'dlq_entry_id',
      keyed,
      'dlq_attempts',
      '3',
      'dlq_error',
      'boom',
      'dlq_at',
      '2026-01-02T03:04:05.000Z',
      'dlq_partition',
      '3',
      'dlq_key',
      'acct-7',
    ]);
    // an entry without a key (a foreign producer's) still records its partition
    expect(second.fields.slice(-4)).toEqual([
      'dlq_at',
      '2026-01-02T03:04:05.000Z',
      'dlq_partition',
      '3',
    ]);
    expect(letters.map((l) => [l.stream, l.partition, l.key, l.entryId])).toEqual([
      [S, 3, 'acct-7', keyed],
      [S, 3, undefined, unkeyed],
    ]);
    expect(fake.callsOf('ack').map((c) => c.args[0])).toEqual([partitionStream, partitionStream]);
    expect(fake.pel(partitionStream, G).size).toBe(0);
  });
});
