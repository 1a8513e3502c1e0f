/** Calling the user's method and turning what happens into verdicts (lib/consumer/handle/handler-runner.ts). */
import type { EntryHandler } from '../../lib/consumer/context/consumer-config';
import { HandlerRunner } from '../../lib/consumer/handle/handler-runner';
import type { HandlingBatch } from '../../lib/consumer/context/loop-context';
import { EntryRejectedError } from '../../lib/errors/entry-rejected.error';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import { keyedLanes } from '../support/keyed-lanes';
import { testLoop, tick } from '../support/loop-context';
import { NO_TRANSACTION } from '../../lib/consumer/commit';

function messages(n: number): StreamMessage<unknown>[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `b-${i}`,
    entryId: `${i + 1}-0`,
    stream: 'orders',
    group: 'g',
    consumer: 'c1',
    payload: { i },
    attempts: 1,
    signal: new AbortController().signal,
    saveCheckpoint: async () => undefined,
    tx: NO_TRANSACTION,
  }));
}

function batchOf(list: StreamMessage<unknown>[]): HandlingBatch {
  const ids = list.map((m) => m.entryId);
  return {
    ids,
    unsettled: new Set(ids),
    touchedAt: 123,
    started: new Set(),
    ok: [],
    failed: [],
  };
}

const perEntry = (call: (m: StreamMessage<unknown>) => unknown): EntryHandler => ({
  batch: false,
  call,
});
const batch = (call: (m: StreamMessage<unknown>[]) => unknown): EntryHandler =>
  ({ batch: true, call }) as EntryHandler;

describe('HandlerRunner, per entry', () => {
  it("below concurrency a batch outlasting its read's rate-limit window: each later start takes a start of the current window", async () => {
    const loop = testLoop({ concurrency: 1 });
    let windowLasts = true;
    const taken: number[] = [];
    const seen: string[] = [];
    const runner = new HandlerRunner(
      loop.context,
      perEntry(async (m) => {
        seen.push(m.entryId);
        await tick(1);
        windowLasts = false; // the read's window ends while the first entry runs
      }),
      undefined,
      undefined,
      {
        holds: (window) => window === undefined || windowLasts,
        take: (want) => (taken.push(want), Promise.resolve({ count: want, window: 2 })),
        refund: () => undefined,
      },
    );
    const list = messages(3);
    const outcome = await runner.run(list, { ...batchOf(list), startsWindow: 1 });
    expect(outcome.ok).toEqual(['1-0', '2-0', '3-0']);
    expect(seen).toEqual(['1-0', '2-0', '3-0']);
    expect(taken).toEqual([1, 1]); // 2-0 and 3-0 began after the window: one start each
  });

  it('a return is ok, a throw is a failure (counted, logged, remembered), a refusal is rejected', async () => {
    const loop = testLoop();
    const boom = new Error('boom');
    const runner = new HandlerRunner(
      loop.context,
      perEntry((m) => {
        if (m.entryId === '2-0') throw boom;
        if (m.entryId === '3-0') throw new EntryRejectedError('bad dto', 'pipe');
        return Promise.resolve();
      }),
    );
    const list = messages(4);
    const held = batchOf(list);
    const outcome = await runner.run(list, held);
    expect(outcome.ok).toEqual(['1-0', '4-0']);
    expect(outcome.unstarted).toEqual([]);
    expect(outcome.failed.map((f) => [f.message.entryId, f.error, f.claimedAt])).toEqual([
      ['2-0', boom, 123],
    ]);
    expect(outcome.rejected).toEqual([{ entryId: '3-0', attempts: 1, error: 'bad dto' }]);
    expect(held.unsettled.size).toBe(0);
    expect(loop.counters.snapshot()).toMatchObject({ totalErrors: 1, lastError: 'boom' });
    expect(
      loop.logger.has(
        /error Handler T\.h on orders\/g failed on entry 2-0 \(id b-1, attempt 1\): boom/,
      ),
    ).toBe(true);
    expect(runner.lastErrorOf('2-0')).toBe('boom');
    runner.forget(['2-0']);
    expect(runner.lastErrorOf('2-0')).toBeUndefined();
  });

  it('concurrency 1 runs in stream order, one at a time; a stop leaves the rest unstarted', async () => {
    const loop = testLoop({ concurrency: 1 });
    const seen: string[] = [];
    const runner = new HandlerRunner(
      loop.context,
      perEntry(async (m) => {
        seen.push(`start ${m.entryId}`);
        await tick(1);
        seen.push(`end ${m.entryId}`);
        if (m.entryId === '2-0') loop.stop();
      }),
    );
    const list = messages(4);
    const held = batchOf(list);
    const outcome = await runner.run(list, held);
    expect(seen).toEqual(['start 1-0', 'end 1-0', 'start 2-0', 'end 2-0']);
    expect(outcome.ok).toEqual(['1-0', '2-0']);
    expect(outcome.unstarted).toEqual(['3-0', '4-0']);
    expect([...held.started]).toEqual(['1-0', '2-0']);
  });

  it('concurrency n runs up to n handlers at once', async () => {
    const loop = testLoop({ concurrency: 3 });
    let running = 0;
    let most = 0;
    const runner = new HandlerRunner(
      loop.context,
      perEntry(async () => {
        most = Math.max(most, ++running);
        await tick(1);
        running--;
      }),
    );
    const list = messages(7);
    const outcome = await runner.run(list, batchOf(list));
    expect(most).toBe(3);
    expect(outcome.ok.sort()).toEqual(list.map((m) => m.entryId).sort());
  });
});

describe('HandlerRunner, batch mode', () => {
  it('acks what the batch returns (messages or ids); the rest fail on their own; strangers are ignored', async () => {
    const loop = testLoop();
    const list = messages(3);
    const runner = new HandlerRunner(
      loop.context,
      batch(() => [list[0], '3-0', '9-0']),
    );
    const outcome = await runner.run(list, batchOf(list));
    expect(outcome.ok).toEqual(['1-0', '3-0']);
    expect(outcome.failed.map((f) => [f.message.entryId, f.error])).toEqual([['2-0', undefined]]);
    expect(loop.logger.has(/batch handler returned 9-0, not an entry of this batch; ignored/)).toBe(
      true,
    );
  });

  it('a throw fails every entry; nothing returned acks none; a non-iterable fails the batch', async () => {
    const list = messages(2);
    const thrown = testLoop();
    const failing = new HandlerRunner(
      thrown.context,
      batch(() => {
        throw new Error('down');
      }),
    );
    const out1 = await failing.run(list, batchOf(list));
    expect(out1.failed.map((f) => f.message.entryId)).toEqual(['1-0', '2-0']);
    expect(failing.lastErrorOf('2-0')).toBe('down');
    expect(thrown.counters.snapshot().totalErrors).toBe(1);

    const silent = testLoop();
    const out2 = await new HandlerRunner(
      silent.context,
      batch(() => undefined),
    ).run(list, batchOf(list));
    expect(out2.ok).toEqual([]);
    expect(out2.failed).toHaveLength(2);
    expect(silent.logger.has(/batch handler returned nothing; acked none of 2 entries/)).toBe(true);

    const odd = testLoop();
    const out3 = await new HandlerRunner(
      odd.context,
      batch(() => true),
    ).run(list, batchOf(list));
    expect(out3.failed).toHaveLength(2);
    expect(odd.counters.snapshot().lastError).toMatch(/not an iterable of messages or entry ids/);
  });

  it('a refusal rejects the whole batch; a batch not started at stop is all unstarted', async () => {
    const list = messages(2);
    const loop = testLoop();
    const refusing = new HandlerRunner(
      loop.context,
      batch(() => {
        throw new EntryRejectedError('nope', 'guard');
      }),
    );
    const out = await refusing.run(list, batchOf(list));
    expect(out.rejected?.map((r) => [r.entryId, r.error])).toEqual([
      ['1-0', 'nope'],
      ['2-0', 'nope'],
    ]);
    loop.stop();
    const calls: unknown[] = [];
    const stopped = new HandlerRunner(
      loop.context,
      batch((m) => calls.push(m)),
    );
    expect(await stopped.run(list, batchOf(list))).toEqual({
      ok: [],
      unstarted: ['1-0', '2-0'],
      failed: [],
    });
    expect(calls).toEqual([]);
  });
});

describe('HandlerRunner, per entry with newerWins lanes', () => {
  const keyOf = (m: StreamMessage<unknown>) => `k${(m.payload as { i: number }).i % 3}`;

  it('concurrency 4: entries of one key run one at a time in stream order, keys alongside; each completion joins the acks at once', async () => {
    const loop = testLoop({ concurrency: 4 });
    const lanes = keyedLanes(loop, { keyOf });
    const order: string[] = [];
    const active = new Map<string, number>();
    let overlaps = 0;
    let running = 0;
    let most = 0;
    const runner = new HandlerRunner(
      loop.context,
      perEntry(async (m) => {
        const key = keyOf(m);
        order.push(m.entryId);
        active.set(key, (active.get(key) ?? 0) + 1);
        if ((active.get(key) ?? 0) > 1) overlaps++;
        most = Math.max(most, ++running);
        await tick();
        await tick();
        running--;
        active.set(key, (active.get(key) ?? 0) - 1);
      }),
      lanes.runner,
    );
    const list = messages(9);
    const outcome = await runner.run(list, batchOf(list));
    expect(overlaps).toBe(0);
    expect(most).toBe(3); // three keys, three lanes at once
    for (const key of ['k0', 'k1', 'k2']) {
      const ofKey = list.filter((m) => keyOf(m) === key).map((m) => m.entryId);
      expect(order.filter((id) => ofKey.includes(id))).toEqual(ofKey);
    }
    // the acks of entries with a later one of their key went out before it; the rest wait
    expect(outcome.ok).toEqual([]);
    const sent = lanes.fake.callsOf('ack').flatMap((c) => c.args[2] as string[]);
    expect([...sent, ...lanes.acks.take()].sort()).toEqual(list.map((m) => m.entryId).sort());
    expect(sent.sort()).toEqual(['1-0', '2-0', '3-0', '4-0', '5-0', '6-0']);
  });

  it('a stop between two entries of a lane leaves the rest of the lane unstarted', async () => {
    const loop = testLoop({ concurrency: 2 });
    const lanes = keyedLanes(loop, { keyOf });
    const runner = new HandlerRunner(
      loop.context,
      perEntry(async (m) => {
        await tick(); // 1-0 and 2-0 both start before the stop
        if (m.entryId === '1-0') loop.stop();
      }),
      lanes.runner,
    );
    const list = messages(6); // lanes k0: 1,4 · k1: 2,5 · k2: 3,6
    const outcome = await runner.run(list, batchOf(list));
    expect(lanes.acks.take().sort()).toEqual(['1-0', '2-0']);
    expect(outcome.unstarted).toEqual(['3-0', '4-0', '5-0', '6-0']);
  });

  it('a failed XACK: the later entries of its key are neither started nor released, and the failure comes out', async () => {
    const loop = testLoop({ concurrency: 1 });
    const lanes = keyedLanes(loop, { keyOf });
    lanes.fake.fail('ack');
    const started: string[] = [];
    const runner = new HandlerRunner(
      loop.context,
      perEntry((m) => void started.push(m.entryId)),
      lanes.runner,
    );
    const list = messages(4); // k0: 1,4 · k1: 2 · k2: 3
    const held = batchOf(list);
    const outcome = await runner.run(list, held);
    expect(started).not.toContain('4-0');
    expect(outcome.unstarted).not.toContain('4-0');
    expect(String(outcome.ackFailure?.error)).toMatch(/injected ack failure/);
    expect(held.unsettled.has('4-0')).toBe(false);
    expect(lanes.drains()).toBe(1);
  });
});
