/** Settling entries other than by a plain ack (lib/consumer/settle/settlement.ts), on the in-memory client. */
import { AckWriter } from '../../lib/consumer/settle/ack-writer';
import { DeadLetterPath } from '../../lib/consumer/settle/dead-letter-path';
import { Heartbeat } from '../../lib/consumer/health/heartbeat';
import type { FailedEntry } from '../../lib/consumer/context/loop-context';
import { RetryScheduler } from '../../lib/consumer/retry/retry-scheduler';
import { Settlement } from '../../lib/consumer/settle/settlement';
import { NonRetryableError } from '../../lib/errors/non-retryable.error';
import type { DeadLetterMessage } from '../../lib/interfaces/dead-letter-message.interface';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import { FakeStreamsClient } from '../support/fake-streams-client';
import { C, G, S, manualClock, testLoop } from '../support/loop-context';

const DLQ = 'orders:dlq';

function setUp(sinkCall?: (letter: DeadLetterMessage) => Promise<void>) {
  const clock = manualClock();
  const loop = testLoop({ minIdleMs: 5000, maxDeliveries: 3, deadLetterStream: DLQ }, clock.now);
  const fake = new FakeStreamsClient();
  fake.seedJson(S, 4);
  const ids = fake.deliverTo(S, G, C, 4);
  const letters: DeadLetterMessage[] = [];
  const sink = {
    handlerCount: 1,
    deliver: async (letter: DeadLetterMessage) => {
      letters.push(letter);
      await sinkCall?.(letter);
    },
  };
  const heartbeat = new Heartbeat(loop.context, fake);
  const scheduler = new RetryScheduler(loop.context);
  const lastErrors = new Map<string, string>([[ids[0], 'boom']]);
  const settlement = new Settlement(loop.context, {
    client: fake,
    acks: new AckWriter(loop.context, fake),
    deadLetters: new DeadLetterPath(loop.context, fake, sink, new AckWriter(loop.context, fake)),
    heartbeat,
    waitingRetries: scheduler,
    errors: { lastErrorOf: (id) => lastErrors.get(id) },
  });
  return { clock, loop, fake, ids, letters, heartbeat, scheduler, settlement };
}

const fieldsOf = (fake: FakeStreamsClient, id: string) =>
  fake.entries(S).find((e) => e.entryId === id)!.fields;

function failure(entryId: string, attempts: number, error: unknown = new Error('x')): FailedEntry {
  const message = { entryId, id: entryId, attempts } as StreamMessage<unknown>;
  return { message, error, claimedAt: 0, failedAt: 0 };
}

describe('Settlement', () => {
  it('deleted: acked, counted as deleted, logged with the ids', async () => {
    const { loop, fake, ids, settlement } = setUp();
    await settlement.deleted([ids[0]]);
    expect(fake.pel(S, G).has(ids[0])).toBe(false);
    expect(loop.counters.snapshot().totalDeleted).toBe(1);
    expect(loop.logger.has(new RegExp(`1 pending entries were deleted .*${ids[0]}`))).toBe(true);
  });

  it('gone: only ids no longer in the stream are settled as deleted (a peer may hold the rest)', async () => {
    const { loop, fake, ids, settlement } = setUp();
    fake.deleteEntries(S, [ids[1]]);
    await settlement.gone([ids[0], ids[1]]);
    expect(fake.pel(S, G).has(ids[0])).toBe(true);
    expect(fake.pel(S, G).has(ids[1])).toBe(false);
    expect(loop.counters.snapshot().totalDeleted).toBe(1);
  });

  it('uncharge: the delivery count goes back to before the read; the entry stays ours at idle 0', async () => {
    const { fake, ids, settlement } = setUp();
    await settlement.uncharge([ids[0]], new Map([[ids[0], 3]]));
    expect(fake.pel(S, G).get(ids[0])).toMatchObject({ consumer: C, deliveries: 2 });
    expect(fake.callsOf('release')[0].args).toEqual([S, G, C, [ids[0]], 0, [2]]);
  });

  it('release: handed to peers idle minIdleMs, uncharged (a fresh read counts 1), logged', async () => {
    const { loop, fake, ids, settlement } = setUp();
    await settlement.release([ids[0], ids[1]], null, 'unstarted');
    expect(fake.callsOf('release')[0].args).toEqual([S, G, C, [ids[0], ids[1]], 5000, [0, 0]]);
    expect(fake.pel(S, G).get(ids[0])!.idleMs).toBeGreaterThanOrEqual(5000);
    expect(loop.logger.has(/released 2 unstarted entries to peers/)).toBe(true);
    await settlement.release([], null, 'unstarted'); // nothing to release: no command
    expect(fake.callsOf('release')).toHaveLength(1);
  });

  it('deadLetter: copied, handed to @DeadLetter, acked; the error is the last handler error; held meanwhile', async () => {
    let heldDuring: string[] = [];
    const { clock, loop, fake, ids, letters, heartbeat, settlement } = setUp(async () => {
      // the heartbeat keeps the entry claimed while the path runs
      const touchesBefore = fake.callsOf('touch').length;
      clock.advance(5000);
      await heartbeat.tick();
      heldDuring = fake
        .callsOf('touch')
        .slice(touchesBefore)
        .flatMap((c) => c.args[3] as string[]);
    });
    await settlement.deadLetter(
      [{ entryId: ids[0], fields: fieldsOf(fake, ids[0]), attempts: 3, error: undefined }],
      'max_deliveries',
    );
    expect(letters.map((l) => [l.entryId, l.reason, l.error])).toEqual([
      [ids[0], 'max_deliveries', 'boom'],
    ]);
    expect(fake.entries(DLQ)).toHaveLength(1);
    expect(fake.pel(S, G).has(ids[0])).toBe(false);
    expect(loop.counters.snapshot().totalDlq).toBe(1);
    expect(heldDuring).toEqual([ids[0]]);
    // once settled the entries are no longer held
    clock.advance(5000);
    const before = fake.callsOf('touch').length;
    await heartbeat.tick();
    expect(fake.callsOf('touch')).toHaveLength(before);
  });

  it('rejected: dead-lettered at once with the refusal text, whatever the attempt', async () => {
    const { fake, ids, letters, settlement } = setUp();
    await settlement.rejected(
      [{ entryId: ids[1], attempts: 1, error: 'bad dto' }],
      fake.entries(S),
    );
    expect(letters.map((l) => [l.entryId, l.reason, l.error, l.attempts])).toEqual([
      [ids[1], 'rejected', 'bad dto', 1],
    ]);
  });

  it('failed: NonRetryableError and the last delivery go down the path; the rest wait for a retry', async () => {
    const { fake, ids, letters, scheduler, settlement } = setUp();
    await settlement.failed(
      [
        failure(ids[0], 1, new NonRetryableError('no')),
        failure(ids[1], 3),
        failure(ids[2], 1),
        failure(ids[3], 2, undefined),
      ],
      fake.entries(S),
    );
    expect(letters.map((l) => [l.entryId, l.reason, l.error])).toEqual([
      [ids[0], 'non_retryable', 'boom'],
      [ids[1], 'max_deliveries', 'not returned for ack by the batch handler'],
    ]);
    expect([ids[2], ids[3]].map((id) => scheduler.has(id))).toEqual([true, true]);
    expect([...fake.pel(S, G).keys()]).toEqual([ids[2], ids[3]]);
  });
});
