/**
 * "A replay never goes back" through the whole loop (lib/consumer/loop/stream-consumer.ts and its
 * keyed lanes), against the in-memory client: the XACK sent with a read fails while that read
 * delivers the next entry of the key; that entry must not start before the ack went through. It
 * stays pending, and runs from the own PEL drain once the loop's acks are in. And a stop while a
 * held key's lane runs acks what the lane finishes (the lanes end before the loop's last flush).
 */
import type { EntryHandler } from '../../lib/consumer/context/consumer-config';
import { StreamConsumer } from '../../lib/consumer/loop/stream-consumer';
import { resolveHandlerOptions } from '../../lib/config/module-options';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import type { StreamsClient } from '../../lib/redis/streams-client';
import { deadLetterSink, MemoryLogger } from '../support/engine';
import { FakeStreamsClient } from '../support/fake-streams-client';
import { waitFor } from '../support/wait-for';

const S = 's';
const G = 'g';
/** Branded ids (24 characters of [0-9a-z]): `newerWins` keys only those. */
const branded = (n: number) => `${'0'.repeat(23)}${n}`;

let consumer: StreamConsumer | undefined;
afterEach(async () => {
  await consumer?.stop(1000);
});

it("a failed XACK holds the key's next entry until the ack went through; it then runs once, from the own PEL", async () => {
  const fake = new FakeStreamsClient();
  const log: string[] = [];
  // the fake, with every XACK's outcome logged in order with the handler's starts (newerWins
  // acks through the script that writes its records: `ackRecording`; a plain XACK: `ack`), and no
  // skip record known (nothing is skipped)
  let failNextAck = false;
  const logged =
    <A extends unknown[], R>(
      send: (...args: A) => Promise<R>,
      idsOf: (args: A) => readonly string[],
    ) =>
    async (...args: A): Promise<R> => {
      const ids = idsOf(args).join(',');
      if (failNextAck) {
        failNextAck = false;
        log.push(`xack-failed ${ids}`);
        throw new Error('ERR injected XACK failure');
      }
      const reply = await send(...args);
      log.push(`acked ${ids}`);
      return reply;
    };
  const client = Object.assign(Object.create(fake) as FakeStreamsClient, {
    readRecords: async (_s: string, _g: string, queries: readonly unknown[]) =>
      queries.map(() => null),
    ack: logged(
      (...args: Parameters<StreamsClient['ack']>) => fake.ack(args[0], args[1], args[2]),
      (args) => args[2],
    ),
    ackRecording: logged(
      (...args: Parameters<NonNullable<StreamsClient['ackRecording']>>) =>
        fake.ackRecording(...args),
      (args) => args[2],
    ),
  });
  const seed = (n: number) =>
    fake.seed(S, ['id', branded(n), 'data', JSON.stringify({ account: 'a' })]);
  const first = seed(1);
  let second = '';
  const logger = new MemoryLogger();
  const handler: EntryHandler = {
    batch: false,
    call: (m: StreamMessage<unknown>) => {
      log.push(`start ${m.entryId}`);
      if (m.entryId !== first) return;
      // its XACK goes with the next read, which delivers the next entry of the key: it fails
      failNextAck = true;
      second = seed(2);
    },
  };
  consumer = new StreamConsumer({
    stream: S,
    group: G,
    consumer: 'c1',
    handlerName: 'Unit.handle',
    options: resolveHandlerOptions(
      S,
      'unit',
      {},
      {
        blockMs: 50,
        newerWins: (m: StreamMessage<{ account: string }>) => m.payload.account,
      },
    ),
    client,
    handler,
    deadLetters: deadLetterSink(),
    logger,
  });
  consumer.start();
  await waitFor(() => log.includes(`start ${second}`) && fake.pel(S, G).size === 0, {
    timeoutMs: 5000,
    message: 'the second entry handled and both acked',
  });
  const failedAt = log.indexOf(`xack-failed ${first}`);
  const ackedAt = log.findIndex((line) => line.startsWith('acked ') && line.includes(first));
  expect(failedAt).toBeGreaterThan(log.indexOf(`start ${first}`));
  expect(ackedAt).toBeGreaterThan(failedAt);
  expect(log.indexOf(`start ${second}`)).toBeGreaterThan(ackedAt);
  expect(log.filter((line) => line === `start ${second}`)).toHaveLength(1);
  expect(
    logger.lines.some((l) =>
      l.startsWith(`warn Unit.handle on s/g: entries ${first} were not acknowledged`),
    ),
  ).toBe(true);
});

it("a stop while a held key's lane runs acks what the lane finishes (nothing left pending)", async () => {
  const fake = new FakeStreamsClient();
  const first = fake.seed(S, ['id', 'a-1', 'data', '{}', 'pkey', 'a']);
  let release: () => void = () => undefined;
  let retryStarted = false;
  const handler: EntryHandler = {
    batch: false,
    call: async (m: StreamMessage<unknown>) => {
      if (m.attempts === 1) throw new Error('first attempt fails');
      retryStarted = true;
      await new Promise<void>((resolve) => (release = resolve)); // still running at the stop
    },
  };
  consumer = new StreamConsumer({
    stream: S,
    group: G,
    consumer: 'c1',
    handlerName: 'Unit.handle',
    options: resolveHandlerOptions(
      S,
      'unit',
      {},
      {
        blockMs: 50,
        partitions: 1,
        retry: { type: 'fixed', delayMs: 20 },
      },
    ),
    client: fake,
    handler,
    deadLetters: deadLetterSink(),
    logger: new MemoryLogger(),
    partition: { index: 0, generation: 1 },
  });
  consumer.start();
  await waitFor(() => retryStarted, { message: "the held key's retry started" });
  const stopping = consumer.stop(2000);
  setTimeout(() => release(), 50);
  await stopping;
  consumer = undefined;
  expect(fake.pel(S, G).has(first)).toBe(false);
});
