/** The loop's own parked XREADGROUP (lib/consumer/read/blocking-read.ts) against the in-memory client. */
import { OwnConnectionRead } from '../../lib/consumer/read/blocking-read';
import { FakeStreamsClient } from '../support/fake-streams-client';
import { C, G, S } from '../support/loop-context';

describe('OwnConnectionRead', () => {
  it('reads new entries with BLOCK = min(waitMs, parkMs), at least 1 ms, and the reply margin of parkMs', async () => {
    const fake = new FakeStreamsClient();
    fake.seedGroup(S, G);
    const ids = fake.seedJson(S, 3);
    const read = new OwnConnectionRead(fake, S, G, C);
    expect((await read.read(2, 80, 5000)).map((e) => e.entryId)).toEqual(ids.slice(0, 2));
    await read.read(2, 9000, 5000);
    await read.read(2, 0, 5000);
    await read.read(2, 50, 200);
    // a park cut short (80 ms, 1 ms) may be answered as late as the handler's 5000 ms park, not
    // 1000 ms after its own end: a 1.5 s failover pause is ridden out whenever it comes
    expect(fake.callsOf('readGroup').map((c) => c.args)).toEqual([
      [S, G, C, 2, '>', 80, 5000],
      [S, G, C, 2, '>', 5000, 5000],
      [S, G, C, 2, '>', 1, 5000],
      [S, G, C, 2, '>', 50, 1000],
    ]);
  });

  it('interrupt ends a parked read with what it got (nothing) and passes mayDrop on', async () => {
    const fake = new FakeStreamsClient();
    fake.seedGroup(S, G);
    const calls: boolean[] = [];
    const original = fake.interruptRead.bind(fake);
    fake.interruptRead = (mayDrop?: boolean) => {
      calls.push(mayDrop ?? false);
      return original();
    };
    const read = new OwnConnectionRead(fake, S, G, C);
    const parked = read.read(10, 60_000, 60_000);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await read.interrupt(true);
    expect(await parked).toEqual([]);
    expect(calls).toEqual([true]);
  });
});
