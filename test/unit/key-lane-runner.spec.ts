/**
 * Keyed lanes (lib/consumer/order/key-lane-runner.ts, key-ack-gate.ts, start-slots.ts; docs/partitions.md
 * "Order"): a key's next entry starts only once the XACK reply of its completed one is in; the
 * acks of many keys share one XACK while the other keys run; a key waiting for its ack holds no
 * slot; a failed XACK holds its key's next entry back (pending, for the own PEL drain); the
 * `concurrency` slots are shared with held keys' lanes, whose starts ask the rate limit.
 */
import type { LaneVerdict } from '../../lib/consumer/order/lane-waves';
import type { StartLimiter } from '../../lib/consumer/limits/rate-limiter';
import { StartSlots } from '../../lib/consumer/limits/start-slots';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import { keyed, keyedLanes, type KeyedLanes } from '../support/keyed-lanes';
import { testLoop, tick } from '../support/loop-context';

/** `perKey` entries of each key, interleaved as a read delivers them: a1 b1 c1 a2 b2 ... */
function interleaved(keys: string[], perKey: number): StreamMessage<unknown>[] {
  const list: StreamMessage<unknown>[] = [];
  for (let n = 1; n <= perKey; n++) for (const key of keys) list.push(keyed(`${key}${n}`, key));
  return list;
}

/**
 * A rate limiter that records what the lanes ask of it: each `take` (its `want`) and each refund
 * (count and window). Starts of `window` hold while `current()` says so; a take gives `grant`.
 */
function recordingLimiter({
  grant = (want: number): number => want,
  current = (): boolean => true,
}: { grant?: (want: number) => number; current?: () => boolean } = {}) {
  const taken: number[] = [];
  const refunds: Array<{ count: number; window: number | undefined }> = [];
  const limiter: StartLimiter = {
    limits: true,
    acquire: (want) => Promise.resolve(grant(want)),
    take: (want) => {
      taken.push(want);
      return Promise.resolve({ count: grant(want), window: 2 });
    },
    refund: (count, window) => void refunds.push({ count, window }),
    readStarts: (want) => Promise.resolve({ count: want, window: 2, parkMs: Infinity }),
    readDone: () => undefined,
    holds: (window) => window === undefined || current(),
    confirm: (_count, window) => Promise.resolve(window),
  };
  return { limiter, taken, refunds };
}

/** A handler of `ms` that logs its start and end and returns. */
function handlerOf(lanes: KeyedLanes, ms = 2) {
  let running = 0;
  let most = 0;
  const start = async (m: StreamMessage<unknown>): Promise<LaneVerdict> => {
    lanes.log.push(`start ${m.entryId}`);
    most = Math.max(most, ++running);
    await tick(ms);
    running--;
    lanes.log.push(`end ${m.entryId}`);
    return 'ok';
  };
  return { start, most: () => most };
}

/** Index of the first log line of `kind` naming `id`. */
function at(log: string[], kind: string, id: string): number {
  return log.findIndex((line) => {
    const [k, ids] = line.split(' ');
    return k === kind && ids.split(',').includes(id);
  });
}

describe('KeyLaneRunner and KeyAckGate', () => {
  it("starts a key's next entry only after the XACK reply of its completed one; the last rides with the next read", async () => {
    const loop = testLoop({ concurrency: 2 });
    const lanes = keyedLanes(loop);
    lanes.holdAcks(15);
    const { start } = handlerOf(lanes);
    const list = interleaved(['a', 'b', 'c'], 3);
    const outcome = await lanes.runner.run(list, false, start);
    expect(outcome.leftPending.size).toBe(0);
    for (const key of ['a', 'b', 'c'])
      for (let n = 2; n <= 3; n++) {
        const acked = at(lanes.log, 'acked', `${key}${n - 1}`);
        expect(acked).toBeGreaterThan(at(lanes.log, 'end', `${key}${n - 1}`));
        expect(at(lanes.log, 'start', `${key}${n}`)).toBeGreaterThan(acked);
      }
    // nothing waits behind a key's last entry: no XACK leaves for it (none after the run either);
    // it goes with the next read, or along with an XACK another key waited for (it completed
    // meanwhile: timers late under load)
    await tick(50);
    const xacks = lanes.log.filter((line) => line.startsWith('xack ')).map((l) => l.slice(5));
    for (const ids of xacks) expect(ids.split(',').some((id) => !id.endsWith('3'))).toBe(true);
    const alongXacks = xacks.flatMap((ids) => ids.split(',')).filter((id) => id.endsWith('3'));
    expect([...alongXacks, ...lanes.acks.take()].sort()).toEqual(['a3', 'b3', 'c3']);
  });

  it('gathers the acks of many keys into one XACK while the other keys keep running', async () => {
    const loop = testLoop({ concurrency: 4 });
    const lanes = keyedLanes(loop);
    lanes.holdAcks(100); // long beside the 2 ms handlers, also when timers run late under load
    const { start, most } = handlerOf(lanes);
    const keys = Array.from({ length: 12 }, (_, i) => `k${i}-`);
    await lanes.runner.run(interleaved(keys, 3), false, start);
    const xacks = lanes.log.filter((line) => line.startsWith('xack '));
    const sent = xacks.flatMap((line) => line.slice(5).split(','));
    const sizes = xacks.map((line) => line.slice(5).split(',').length);
    // 24 entries have a later one of their key: one XACK each would be 24 round trips. A key's
    // last entry rides along when it completed while another key still waited (timers late under
    // load), so up to 36 ids go out, each once
    for (const key of keys) for (const n of [1, 2]) expect(sent).toContain(`${key}${n}`);
    expect(new Set(sent).size).toBe(sent.length);
    expect(xacks.length).toBeLessThanOrEqual(8);
    expect(Math.max(...sizes)).toBeGreaterThanOrEqual(4);
    // a handler started while an XACK was on the wire
    const first = lanes.log.indexOf(xacks[0]);
    const firstReply = lanes.log.findIndex((line) => line.startsWith('acked '));
    expect(lanes.log.slice(first, firstReply).some((line) => line.startsWith('start '))).toBe(true);
    expect(most()).toBe(4);
  });

  it('a key whose entry completed while an XACK was on the wire waits for the next XACK, not for that reply', async () => {
    const loop = testLoop({ concurrency: 2 });
    const lanes = keyedLanes(loop);
    lanes.holdAcks(200);
    // b1 ends first: its XACK leaves alone; a1 ends once it is on the wire, so a1 goes in the next
    const start = async (m: StreamMessage<unknown>): Promise<LaneVerdict> => {
      lanes.log.push(`start ${m.entryId}`);
      await tick(1);
      if (m.entryId === 'a1') while (!lanes.log.includes('xack b1')) await tick(1);
      lanes.log.push(`end ${m.entryId}`);
      return 'ok';
    };
    const list = [keyed('a1', 'a'), keyed('b1', 'b'), keyed('a2', 'a'), keyed('b2', 'b')];
    const outcome = await lanes.runner.run(list, false, start);
    expect(outcome.leftPending.size).toBe(0);
    const firstReply = lanes.log.findIndex((line) => line.startsWith('acked '));
    expect(lanes.log[firstReply]).toBe('acked b1');
    // the first reply frees b, not a: a2 starts only once a1's own XACK reply is in
    expect(at(lanes.log, 'acked', 'a1')).toBeGreaterThan(firstReply);
    expect(at(lanes.log, 'start', 'a2')).toBeGreaterThan(at(lanes.log, 'acked', 'a1'));
    expect(at(lanes.log, 'start', 'b2')).toBeGreaterThan(firstReply);
    expect(at(lanes.log, 'start', 'b2')).toBeLessThan(at(lanes.log, 'acked', 'a1'));
  });

  it('a key waiting for its acknowledgement holds no concurrency slot', async () => {
    const loop = testLoop({ concurrency: 1 });
    const lanes = keyedLanes(loop);
    lanes.holdAcks(30);
    const { start, most } = handlerOf(lanes);
    await lanes.runner.run([keyed('a1', 'a'), keyed('a2', 'a'), keyed('b1', 'b')], false, start);
    expect(most()).toBe(1);
    // b1 runs in the only slot while a2 waits for a1's XACK reply
    expect(at(lanes.log, 'start', 'b1')).toBeGreaterThan(at(lanes.log, 'end', 'a1'));
    expect(at(lanes.log, 'start', 'b1')).toBeLessThan(at(lanes.log, 'acked', 'a1'));
    expect(at(lanes.log, 'start', 'a2')).toBeGreaterThan(at(lanes.log, 'acked', 'a1'));
  });

  it("a failed XACK holds its key's next entry back, pending, and blocks starts until the drain reopens", async () => {
    const loop = testLoop({ concurrency: 2 });
    const lanes = keyedLanes(loop);
    lanes.fake.fail('ack');
    const { start } = handlerOf(lanes);
    const outcome = await lanes.runner.run(
      [keyed('a1', 'a'), keyed('b1', 'b'), keyed('a2', 'a'), keyed('a3', 'a')],
      false,
      start,
    );
    expect([...outcome.leftPending]).toEqual(['a2', 'a3']);
    expect(String(outcome.ackFailure?.error)).toMatch(/injected ack failure/);
    expect(at(lanes.log, 'start', 'a2')).toBe(-1);
    expect(lanes.gate.blocked).toBe(true);
    expect(lanes.drains()).toBe(1);
    expect(loop.logger.has(/warn T\.h on orders\/g: entries a1.* were not acknowledged/)).toBe(
      true,
    );
    // while blocked nothing starts, and the failure is reported once
    const later = await lanes.runner.run([keyed('c1', 'c')], false, start);
    expect([...later.leftPending]).toEqual(['c1']);
    expect(later.ackFailure).toBeUndefined();
    expect(at(lanes.log, 'start', 'c1')).toBe(-1);
    // the drain begins: a1's ack (put back) goes out before a2 starts
    lanes.gate.reopen();
    const drained = await lanes.runner.run([keyed('a2', 'a'), keyed('a3', 'a')], false, start);
    expect(drained.leftPending.size).toBe(0);
    expect(at(lanes.log, 'start', 'a2')).toBeGreaterThan(at(lanes.log, 'acked', 'a1'));
    expect(at(lanes.log, 'start', 'a3')).toBeGreaterThan(at(lanes.log, 'acked', 'a2'));
  });

  it("a held key's lane shares the loop's concurrency with the batch and asks the rate limit for each start", async () => {
    const loop = testLoop({ concurrency: 2 });
    const { limiter, taken, refunds } = recordingLimiter();
    const lanes = keyedLanes(loop, { limiter });
    const { start, most } = handlerOf(lanes, 10);
    const heldLane = [keyed('x1', 'x', 2), keyed('x2', 'x'), keyed('x3', 'x')];
    await Promise.all([
      lanes.runner.run(heldLane, true, start),
      lanes.runner.run(interleaved(['a', 'b', 'c'], 2), false, start, 1),
    ]);
    expect(most()).toBe(2);
    expect(lanes.log.filter((l) => l.startsWith('end '))).toHaveLength(9);
    // one start per held entry (the retry and those parked behind it); none for the read's
    expect(taken).toEqual([1, 1, 1]);
    expect(refunds).toEqual([]);
  });

  it("a read's entry that begins after its window ended takes a start of the current one; one inside it takes none", async () => {
    // concurrency 1: b1 waits for a1's slot; the read's window ends while a1 runs
    const loop = testLoop({ concurrency: 1 });
    let windowLasts = true;
    const { limiter, taken } = recordingLimiter({ current: () => windowLasts });
    const lanes = keyedLanes(loop, { limiter });
    const start = async (m: StreamMessage<unknown>): Promise<LaneVerdict> => {
      lanes.log.push(`start ${m.entryId}`);
      await tick(2);
      windowLasts = false;
      return 'ok';
    };
    await lanes.runner.run([keyed('a1', 'a'), keyed('b1', 'b'), keyed('c1', 'c')], false, start, 1);
    expect(lanes.log.filter((l) => l.startsWith('start '))).toEqual([
      'start a1',
      'start b1',
      'start c1',
    ]);
    // a1 began inside the read's window; b1 and c1 after it, each with a start of its own
    expect(taken).toEqual([1, 1]);
  });

  it("a read's entry past its window starts nothing once the limiter says stop", async () => {
    const loop = testLoop({ concurrency: 1 });
    const { limiter } = recordingLimiter({ current: () => false, grant: () => 0 });
    const lanes = keyedLanes(loop, { limiter });
    const { start } = handlerOf(lanes);
    const outcome = await lanes.runner.run([keyed('a1', 'a'), keyed('b1', 'b')], false, start, 1);
    expect(lanes.log.filter((l) => l.startsWith('start '))).toEqual([]);
    expect([...outcome.leftPending]).toEqual([]);
  });

  it('entries diverted to a held key, and the later ones of a key that becomes held, give back their starts', async () => {
    const loop = testLoop({ concurrency: 1 });
    const { limiter, refunds } = recordingLimiter();
    const holds: string[] = [];
    const lanes = keyedLanes(loop, {
      limiter,
      held: {
        divert: (messages) => messages.filter((m) => m.key !== 'h'),
        hold: (key, message, _error, _delay, rest) =>
          void holds.push(`${key}:${message.entryId}+${rest.map((m) => m.entryId).join(',')}`),
      },
    });
    const start = async (m: StreamMessage<unknown>): Promise<LaneVerdict> => {
      await tick();
      return m.entryId === 'a1' ? { retryInMs: 50, error: new Error('boom') } : 'ok';
    };
    const outcome = await lanes.runner.run(
      [keyed('h1', 'h'), keyed('a1', 'a'), keyed('a2', 'a'), keyed('a3', 'a'), keyed('b1', 'b')],
      false,
      start,
      1,
    );
    expect([...outcome.handed].sort()).toEqual(['a1', 'a2', 'a3', 'h1']);
    expect(holds).toEqual(['a:a1+a2,a3']);
    // h1 diverted, a2 and a3 parked behind a1's retry: given back in the window the read took them
    expect(refunds).toEqual([
      { count: 1, window: 1 },
      { count: 2, window: 1 },
    ]);
  });

  it('a held lane whose limiter says stop starts nothing more', async () => {
    const loop = testLoop({ concurrency: 1 });
    const { limiter } = recordingLimiter({ grant: () => 0 });
    const lanes = keyedLanes(loop, { limiter });
    const { start } = handlerOf(lanes);
    const outcome = await lanes.runner.run([keyed('x1', 'x', 2), keyed('x2', 'x')], true, start);
    expect(lanes.log.filter((l) => l.startsWith('start '))).toEqual([]);
    expect(outcome.leftPending.size).toBe(0);
  });
});

describe('StartSlots', () => {
  it('a synchronous handler runs every startable entry at once, without a promise per entry, at concurrency 1 too', async () => {
    const loop = testLoop({ concurrency: 1 });
    const lanes = keyedLanes(loop);
    let running = 0;
    let most = 0;
    const start = (m: StreamMessage<unknown>): LaneVerdict => {
      most = Math.max(most, ++running);
      lanes.log.push(`start ${m.entryId}`);
      running--;
      return 'ok';
    };
    const list = interleaved(['a', 'b', 'c', 'd'], 2);

    const run = lanes.runner.run(list, false, start);
    // before anything was awaited: the first entry of every key ran (their next ones wait for
    // the XACK); an entry that waits for nothing waits for no microtask either
    expect(lanes.log).toEqual(['start a1', 'start b1', 'start c1', 'start d1']);
    expect(lanes.slots.inUse).toBe(0);

    const outcome = await run;
    expect(outcome.leftPending.size).toBe(0);
    expect(most).toBe(1);
    // the second entries once the one XACK of the first four is in
    expect(lanes.log.slice(4)).toEqual([
      'xack a1,b1,c1,d1',
      'acked a1,b1,c1,d1',
      'start a2',
      'start b2',
      'start c2',
      'start d2',
    ]);
  });

  it('hands slots over in the order they were asked for, never more than its size at once', async () => {
    const slots = new StartSlots(2);
    expect(slots.take()).toBeNull();
    expect(slots.take()).toBeNull();
    const order: string[] = [];
    const third = slots.take()!.then(() => order.push('third'));
    const fourth = slots.take()!.then(() => order.push('fourth'));
    expect(slots.inUse).toBe(2);
    slots.give();
    await third;
    expect(order).toEqual(['third']);
    slots.give();
    await fourth;
    expect(order).toEqual(['third', 'fourth']);
    slots.give();
    slots.give();
    expect(slots.inUse).toBe(0);
  });
});
