/**
 * HeldKeys (docs/partitions.md "Order"): a failed entry's key is held; its later entries are
 * parked in stream order behind the retry, which runs after its delay with them; a pause holds
 * the lane; a stop settles the waiting retry as a failure and releases the parked entries.
 */
import type { StreamMessage } from '../../lib';
import { HeldKeys } from '../../lib/consumer/order/held-keys';
import { testLoop } from '../support/loop-context';
import { freshClock, sleep, waitFor } from '../support/wait-for';

const message = (entryId: string, key: string, attempts = 1): StreamMessage<unknown> =>
  ({ id: entryId, entryId, key, attempts }) as unknown as StreamMessage<unknown>;
const keyOf = (m: StreamMessage<unknown>): string | undefined => m.key;

function gate(paused = () => false) {
  const loop = testLoop({ claimIntervalMs: 20 });
  const runs: Array<Array<[string, number]>> = [];
  const stopped: Array<{ failed: string | null; parked: readonly string[] }> = [];
  let failNext = false;
  const held: HeldKeys = new HeldKeys(loop.context, {
    run: (messages) => {
      runs.push(messages.map((m) => [m.entryId, m.attempts]));
      if (failNext) {
        failNext = false;
        held.hold(messages[0].key!, messages[0], new Error('again'), 30, messages.slice(1));
      }
      return Promise.resolve();
    },
    stopped: (failed, parked) => {
      stopped.push({ failed: failed?.message.entryId ?? null, parked });
      return Promise.resolve();
    },
    isPaused: paused,
  });
  return { loop, held, runs, stopped, failAgain: () => (failNext = true) };
}

describe('HeldKeys', () => {
  it('parks the later entries of a held key in order and runs them after the retry', async () => {
    const { held, runs } = gate();
    const fresh = [message('1-0', 'B')];
    expect(held.divert(fresh, keyOf)).toBe(fresh); // nothing held: the same array
    const heldAt = await freshClock(); // the retry's delay runs from hold()
    held.hold('A', message('1-1', 'A'), new Error('boom'), 50, [message('1-2', 'A')]);
    expect(held.holds('A')).toBe(true);
    const read = [message('1-1', 'A'), message('2-0', 'B'), message('2-1', 'A')];
    // a redelivery of a held entry is dropped; a later one of the key is parked behind
    expect(held.divert(read, keyOf).map((m) => m.entryId)).toEqual(['2-0']);
    expect([...held.ids()].sort()).toEqual(['1-1', '1-2', '2-1']);
    await held.idle();
    expect(Date.now() - heldAt).toBeGreaterThanOrEqual(49);
    expect(runs).toEqual([
      [
        ['1-1', 2],
        ['1-2', 1],
        ['2-1', 1],
      ],
    ]);
    expect(held.holds('A')).toBe(false);
  });

  it('holds the key again when the retry fails, with what is behind it', async () => {
    const { held, runs, failAgain } = gate();
    failAgain();
    held.hold('A', message('1-1', 'A'), new Error('boom'), 10, [message('1-2', 'A')]);
    await held.idle();
    expect(runs).toEqual([
      [
        ['1-1', 2],
        ['1-2', 1],
      ],
      [
        ['1-1', 3],
        ['1-2', 1],
      ],
    ]);
  });

  it("counts its retries in the loop's stats: retrying while one waits, totalRetries per retry", async () => {
    const { loop, held, failAgain } = gate();
    const stats = () => loop.counters.snapshot();
    failAgain();
    held.hold('A', message('1-1', 'A'), new Error('boom'), 40, []);
    held.hold('B', message('1-2', 'B'), new Error('boom'), 40, [message('1-3', 'B')]);
    expect(stats()).toMatchObject({ retrying: 2, totalRetries: 2 });
    // the first retry to run fails again and waits again
    await waitFor(() => stats().totalRetries === 3);
    expect(stats().retrying).toBeGreaterThanOrEqual(1);
    await held.idle();
    expect(stats()).toMatchObject({ retrying: 0, totalRetries: 3 });
  });

  it('starts nothing while the group is paused', async () => {
    let paused = true;
    const { held, runs } = gate(() => paused);
    held.hold('A', message('1-1', 'A'), new Error('boom'), 1, []);
    await sleep(100);
    expect(runs).toEqual([]);
    paused = false;
    await waitFor(() => runs.length === 1, { message: 'ran after the resume' });
  });

  it('at stop, settles the waiting retry as a failure and releases the parked entries', async () => {
    const { loop, held, runs, stopped } = gate();
    held.hold('A', message('1-1', 'A'), new Error('boom'), 60_000, [message('1-2', 'A')]);
    held.divert([message('2-1', 'A')], keyOf);
    loop.stop();
    await held.idle();
    expect(runs).toEqual([]);
    expect(stopped).toEqual([{ failed: '1-1', parked: ['1-2', '2-1'] }]);
  });
});
