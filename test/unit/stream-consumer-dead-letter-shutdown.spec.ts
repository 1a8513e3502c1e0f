/**
 * The dead-letter path when the loop stops (issue 10, defect 2), against the in-memory
 * `StreamsClient`: no entry starts down the path once stopping, each letter is acked as soon as its
 * `@DeadLetter` methods completed (not at the end of the batch), and a stop that gives up names
 * the entry still in its `@DeadLetter` methods. (With a real server and the Nest glue:
 * test/faults/shutdown-races.fault.spec.ts.)
 */
import { StreamConsumer } from '../../lib/consumer/loop/stream-consumer';
import { resolveHandlerOptions } from '../../lib/config/module-options';
import type { DeadLetterMessage } from '../../lib/interfaces/dead-letter-message.interface';
import { FakeStreamsClient } from '../support/fake-streams-client';
import { MemoryLogger } from '../support/engine';
import { sleep, waitFor } from '../support/wait-for';

const S = 's';
const G = 'g';

function consumerWith(
  fake: FakeStreamsClient,
  onDead: (letter: DeadLetterMessage) => Promise<void>,
): { consumer: StreamConsumer; logger: MemoryLogger } {
  const logger = new MemoryLogger();
  const consumer = new StreamConsumer({
    stream: S,
    group: G,
    consumer: 'c1',
    handlerName: 'Unit.handle',
    options: resolveHandlerOptions(S, 'unit', {}, { blockMs: 50, deadLetterStream: false }),
    client: fake,
    handler: { batch: false, call: () => undefined },
    deadLetters: { handlerCount: 1, deliver: onDead },
    logger,
  });
  return { consumer, logger };
}

describe('stop() during a batch of dead letters', () => {
  it('starts no letter once stopping and acks each completed letter by itself', async () => {
    const fake = new FakeStreamsClient();
    const ids = Array.from({ length: 5 }, (_, i) => fake.seed(S, ['id', `u-${i}`])); // no data
    const started: string[] = [];
    const { consumer } = consumerWith(fake, async (letter) => {
      started.push(letter.entryId);
      await sleep(60);
    });
    consumer.start();
    await waitFor(() => started.length === 2, { timeoutMs: 2000 });
    await consumer.stop(2000);
    await sleep(150);

    expect(started).toEqual(ids.slice(0, 2));
    expect(fake.callsOf('ack').map((c) => c.args[2])).toEqual([[ids[0]], [ids[1]]]);
    expect([...fake.pel(S, G).keys()]).toEqual(ids.slice(2));
    expect(consumer.snapshot().totalDlq).toBe(2);
  });

  it('a stop that gives up names the entry in its @DeadLetter methods; no letter starts after it', async () => {
    const fake = new FakeStreamsClient();
    const ids = Array.from({ length: 3 }, (_, i) => fake.seed(S, ['id', `u-${i}`]));
    const started: string[] = [];
    const { consumer, logger } = consumerWith(fake, async (letter) => {
      started.push(letter.entryId);
      await sleep(300);
    });
    consumer.start();
    await waitFor(() => started.length === 1, { timeoutMs: 2000 });
    await consumer.stop(50);
    expect(
      logger.has(new RegExp(`@DeadLetter methods still running after 50 ms for entry ${ids[0]}`)),
    ).toBe(true);
    expect(logger.has(/a Redis command was still outstanding/)).toBe(false);
    await sleep(400);
    expect(started).toEqual([ids[0]]);
    // the letters never started stay pending, untouched (no copy, no ack)
    expect([...fake.pel(S, G).keys()]).toEqual(expect.arrayContaining(ids.slice(1)));
  });
});
