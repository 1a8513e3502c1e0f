/** The parked read of new entries and its early wake-ups (lib/consumer/read/parked-read.ts). */
import type { BlockingReader } from '../../lib/consumer/read/blocking-read';
import { ParkedRead } from '../../lib/consumer/read/parked-read';
import type { RawEntry } from '../../lib/redis/streams-client';
import { tick } from '../support/loop-context';

/** A reader whose read waits until interrupted (or for `waitMs`). */
function fakeReader() {
  const calls: string[] = [];
  let wake: (() => void) | null = null;
  const reader: BlockingReader = {
    read: (count, waitMs, parkMs) => {
      calls.push(`read ${count} ${waitMs} ${parkMs}`);
      return new Promise<RawEntry[]>((resolve) => {
        const timer = setTimeout(() => resolve([]), waitMs);
        wake = () => {
          clearTimeout(timer);
          resolve([]);
        };
      });
    },
    interrupt: async (mayDrop) => {
      calls.push(`interrupt ${mayDrop}`);
      wake?.();
    },
  };
  return { reader, calls };
}

describe('ParkedRead', () => {
  it('a retry due within the wait ends the read on time with a gentle interrupt', async () => {
    const { reader, calls } = fakeReader();
    const parked = new ParkedRead(reader);
    const started = Date.now();
    await parked.read(10, 5000, 5000, 30);
    parked.end();
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(calls).toEqual(['read 10 5000 5000', 'interrupt false']);
  });

  it('no wake-up when the next retry is due after the wait, nor once the read ended', async () => {
    const { reader, calls } = fakeReader();
    const parked = new ParkedRead(reader);
    await parked.read(10, 20, 5000, 40);
    parked.end();
    await tick(40);
    expect(calls).toEqual(['read 10 20 5000']);
    const read = parked.read(10, 20, 5000, 10);
    parked.end(); // e.g. the read settled early: its timer goes with it
    await read;
    await tick(20);
    expect(calls).toEqual(['read 10 20 5000', 'read 10 20 5000']);
  });

  it('a stop interrupts (may drop the link) until the parked read returns', async () => {
    const calls: string[] = [];
    let resolveRead: (entries: RawEntry[]) => void = () => undefined;
    let interrupts = 0;
    const reader: BlockingReader = {
      read: () => new Promise((resolve) => (resolveRead = resolve)),
      // CLIENT UNBLOCK overtook the read on the wire twice; the third one lands
      interrupt: async (mayDrop) => {
        calls.push(`interrupt ${mayDrop}`);
        if (++interrupts === 3) resolveRead([]);
      },
    };
    const parked = new ParkedRead(reader);
    const read = parked.read(10, 60_000, 5000, Infinity);
    void read.then(() => parked.end());
    await parked.wakeForStop();
    expect(calls).toEqual(['interrupt true', 'interrupt true', 'interrupt true']);
  });

  it('a stop when nothing is parked sends nothing', async () => {
    const { reader, calls } = fakeReader();
    await new ParkedRead(reader).wakeForStop();
    expect(calls).toEqual([]);
  });

  it("a keyed lane's XACK ends the park it would queue behind, gently, retried until that read returns", async () => {
    const calls: string[] = [];
    let resolveRead: (entries: RawEntry[]) => void = () => undefined;
    let interrupts = 0;
    const reader: BlockingReader = {
      read: () => {
        calls.push('read');
        return new Promise<RawEntry[]>((resolve) => (resolveRead = resolve));
      },
      interrupt: async (mayDrop) => {
        calls.push(`interrupt ${mayDrop}`);
        // the first CLIENT UNBLOCK overtook the read on the wire: only the second one ends it
        if (++interrupts === 2) resolveRead([]);
      },
    };
    const parked = new ParkedRead(reader);
    await parked.wakeForAck(); // not parked: nothing to wake
    expect(calls).toEqual([]);
    const read = parked.read(10, 5000, 5000, Infinity);
    const waking = parked.wakeForAck();
    await read;
    parked.end();
    await waking;
    expect(calls).toEqual(['read', 'interrupt false', 'interrupt false']);
    // the next park is not chased by the wake-up of the one before
    void parked.read(10, 5000, 5000, Infinity);
    await tick(60);
    expect(calls).toEqual(['read', 'interrupt false', 'interrupt false', 'read']);
    resolveRead([]);
    parked.end();
  });
});
