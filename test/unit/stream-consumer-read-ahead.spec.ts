/**
 * Read-ahead (the speed of docs/benchmarks.md, without giving up the loop and shutdown rules of docs/delivery.md): after a full read the next XREADGROUP goes
 * out before the batch is handled. Its entries are handled in order, kept claimed by the heartbeat,
 * released to peers at stop, and a partial read never reads ahead (latency at low rates unchanged).
 */
import { StreamConsumer } from '../../lib/consumer/loop/stream-consumer';
import { resolveHandlerOptions } from '../../lib/config/module-options';
import type { StreamHandlerOptions } from '../../lib/interfaces/stream-handler-options.interface';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import { FakeStreamsClient } from '../support/fake-streams-client';
import { MemoryLogger } from '../support/engine';
import { waitFor } from '../support/wait-for';

const S = 's';
const G = 'g';

function consumerOn(
  fake: FakeStreamsClient,
  call: (m: StreamMessage<unknown>) => unknown,
  options: Partial<StreamHandlerOptions> = {},
): StreamConsumer {
  return new StreamConsumer({
    stream: S,
    group: G,
    consumer: 'c1',
    handlerName: 'Unit.handle',
    options: resolveHandlerOptions(S, 'unit', {}, { blockMs: 50, batchSize: 2, ...options }),
    client: fake,
    handler: { batch: false, call },
    deadLetters: { handlerCount: 0, deliver: async () => undefined },
    logger: new MemoryLogger(),
  });
}

/** The `>` reads of the run: [blockMs or undefined] per call. */
function newReads(fake: FakeStreamsClient): Array<number | undefined> {
  return fake
    .callsOf('readGroup', (args) => args[4] === '>')
    .map((c) => c.args[5] as number | undefined);
}

describe('read-ahead', () => {
  it('reads the next batch without BLOCK while a full batch is handled, and handles all in order', async () => {
    const fake = new FakeStreamsClient();
    const ids = fake.seedJson(S, 5);
    const seen: string[] = [];
    let readsWhileHandlingFirst = -1;
    const consumer = consumerOn(fake, (m) => {
      if (m.entryId === ids[0]) readsWhileHandlingFirst = newReads(fake).length;
      seen.push(m.entryId);
    });
    consumer.start();
    await waitFor(() => seen.length === 5, { timeoutMs: 2000 });
    await waitFor(() => fake.pel(S, G).size === 0, { timeoutMs: 2000 });
    await consumer.stop(1000);
    expect(seen).toEqual(ids);
    // the read-ahead of batch 2 was on the wire before batch 1's first handler ran
    expect(readsWhileHandlingFirst).toBe(2);
    const reads = newReads(fake);
    expect(reads[0]).toBeGreaterThan(0); // the first read parks (BLOCK)
    expect(reads[1]).toBeUndefined(); // read-ahead after a full batch: no BLOCK
    expect(reads[2]).toBeUndefined(); // batch 2 was full too
  });

  it('does not read ahead after a partial batch', async () => {
    const fake = new FakeStreamsClient();
    fake.seedJson(S, 1);
    const seen: string[] = [];
    const consumer = consumerOn(fake, (m) => void seen.push(m.entryId));
    consumer.start();
    await waitFor(() => seen.length === 1, { timeoutMs: 2000 });
    await waitFor(() => newReads(fake).length >= 3, { timeoutMs: 2000 });
    await consumer.stop(1000);
    expect(newReads(fake).every((block) => typeof block === 'number' && block > 0)).toBe(true);
  });

  it('releases read-ahead entries at stop and keeps them claimed while a slow batch runs', async () => {
    const fake = new FakeStreamsClient();
    const ids = fake.seedJson(S, 4);
    const seen: string[] = [];
    let finish: () => void = () => undefined;
    const slow = new Promise<void>((resolve) => (finish = resolve));
    const consumer = consumerOn(
      fake,
      async (m) => {
        seen.push(m.entryId);
        if (m.entryId === ids[0]) await slow;
      },
      { minIdleMs: 200, claimIntervalMs: 10_000 },
    );
    consumer.start();
    await waitFor(() => seen.length === 1, { timeoutMs: 2000 });
    // the heartbeat touches the read-ahead entries (ids 2 and 3) as well as the batch in hand
    await waitFor(
      () => fake.callsOf('touch').some((c) => (c.args[3] as string[]).includes(ids[2])),
      { timeoutMs: 2000 },
    );
    const stopping = consumer.stop(2000);
    finish();
    await stopping;
    expect(seen).toEqual([ids[0]]);
    const released = fake.callsOf('release').flatMap((c) => c.args[3] as string[]);
    expect(released.sort()).toEqual([ids[1], ids[2], ids[3]].sort());
    expect(fake.callsOf('ack').flatMap((c) => c.args[2] as string[])).toEqual([ids[0]]);
    expect([...fake.pel(S, G).keys()].sort()).toEqual([ids[1], ids[2], ids[3]].sort());
  });

  it('dedup: the read sent ahead is looked up as it lands (one MGET), before the XACK of the batch before; the read after it goes out first', async () => {
    const fake = new FakeStreamsClient();
    const ids = fake.seedJson(S, 4);
    const seen: string[] = [];
    const consumer = consumerOn(fake, (m) => void seen.push(m.entryId), { dedup: true });
    consumer.start();
    await waitFor(() => fake.pel(S, G).size === 0 && seen.length === 4, { timeoutMs: 2000 });
    await consumer.stop(1000);
    expect(seen).toEqual(ids);
    // one MGET per read: the parked one's when it came back, the one sent ahead's as it landed
    const asked = (c: { args: unknown[] }) => (c.args[2] as Array<{ id: string }>).map((q) => q.id);
    const mgets = fake.callsOf('readRecords');
    expect(mgets.map(asked).sort()).toEqual([
      ['evt-0', 'evt-1'],
      ['evt-2', 'evt-3'],
    ]);
    const [first] = fake.callsOf('ackRecording');
    expect(first.args[2]).toEqual([ids[0], ids[1]]);
    // the look-up of the read sent ahead did not wait for that XACK
    const aheads = mgets.find((c) => asked(c)[0] === 'evt-2')!;
    expect(fake.calls.indexOf(aheads)).toBeLessThan(fake.calls.indexOf(first));
    // the read after the one sent ahead went out before that XACK
    const third = fake.calls.filter((c) => c.method === 'readGroup' && c.args[4] === '>')[2];
    expect(fake.calls.indexOf(third)).toBeLessThan(fake.calls.indexOf(first));
    expect(consumer.snapshot()).toMatchObject({ totalAcked: 4, totalDuplicates: 0 });
  });

  it("dedup: a copy in the read sent ahead of an entry of the batch in hand is skipped (its look-up, sent before that entry's XACK, reads the loop's own record)", async () => {
    const fake = new FakeStreamsClient();
    const ids = [
      fake.seed(S, ['id', 'order-1', 'data', '{}']),
      fake.seed(S, ['id', 'order-2', 'data', '{}']),
      fake.seed(S, ['id', 'order-1', 'data', '{}']), // the copy, in the next batch
      fake.seed(S, ['id', 'order-3', 'data', '{}']),
    ];
    const seen: string[] = [];
    const consumer = consumerOn(fake, (m) => void seen.push(m.entryId), { dedup: true });
    consumer.start();
    await waitFor(() => fake.pel(S, G).size === 0 && seen.length === 3, { timeoutMs: 2000 });
    await consumer.stop(1000);
    expect(seen).toEqual([ids[0], ids[1], ids[3]]);
    expect(consumer.snapshot()).toMatchObject({ totalAcked: 4, totalDuplicates: 1 });
  });

  it('an XACK that fails after a read sent ahead: the read is handled, the acks go out again, nothing runs twice', async () => {
    const fake = new FakeStreamsClient();
    const ids = fake.seedJson(S, 6);
    fake.fail('ack', { times: 1 });
    const seen: string[] = [];
    const consumer = consumerOn(fake, (m) => void seen.push(m.entryId), {});
    consumer.start();
    await waitFor(() => fake.pel(S, G).size === 0 && seen.length === 6, { timeoutMs: 3000 });
    await consumer.stop(1000);
    expect(seen).toEqual(ids);
    const acked = fake.callsOf('ack').flatMap((c) => c.args[2] as string[]);
    expect(new Set(acked)).toEqual(new Set(ids));
    expect(consumer.snapshot().totalAcked).toBe(6);
  });
});
