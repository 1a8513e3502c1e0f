/** The ack buffer (lib/consumer/settle/ack-buffer.ts) against the in-memory client. */
import { AckWriter } from '../../lib/consumer/settle/ack-writer';
import { AckBuffer } from '../../lib/consumer/settle/ack-buffer';
import { FakeStreamsClient } from '../support/fake-streams-client';
import { C, G, S, testLoop } from '../support/loop-context';

function setUp() {
  const loop = testLoop();
  const fake = new FakeStreamsClient();
  fake.seedJson(S, 5);
  const ids = fake.deliverTo(S, G, C, 5);
  const forgotten: string[] = [];
  const acks = new AckBuffer(loop.context, new AckWriter(loop.context, fake), {
    forget: (done) => forgotten.push(...done),
  });
  return { loop, fake, ids, acks, forgotten };
}

describe('AckBuffer', () => {
  it('sends what was added in one XACK: the entries leave the PEL, are counted, their errors forgotten', async () => {
    const { loop, fake, ids, acks, forgotten } = setUp();
    acks.add(ids.slice(0, 2));
    acks.add(ids.slice(2, 3));
    expect(fake.callsOf('ack')).toHaveLength(0); // nothing goes out before a flush
    await acks.flush();
    expect(fake.callsOf('ack').map((c) => c.args[2])).toEqual([ids.slice(0, 3)]);
    expect([...fake.pel(S, G).keys()]).toEqual(ids.slice(3));
    expect(loop.counters.snapshot().totalAcked).toBe(3);
    expect(forgotten).toEqual(ids.slice(0, 3));
    await acks.flush(); // empty: no command
    expect(fake.callsOf('ack')).toHaveLength(1);
  });

  it('a failed flush keeps the acks, first in line, and throws; the next flush sends them all', async () => {
    const { loop, fake, ids, acks } = setUp();
    acks.add([ids[0]]);
    fake.fail('ack');
    await expect(acks.flush()).rejects.toThrow(/injected ack failure/);
    expect(loop.counters.snapshot().totalAcked).toBe(0);
    acks.add([ids[1]]);
    await acks.flush();
    expect(fake.callsOf('ack').map((c) => c.args[2])).toEqual([[ids[0]], [ids[0], ids[1]]]);
    expect(fake.pel(S, G).has(ids[0])).toBe(false);
  });

  it('sendAhead sends the waiting acks at once and returns before the reply; landed waits for it', async () => {
    const { loop, fake, ids, acks } = setUp();
    let answer!: (n: number) => void;
    fake.overrides.ack = () => new Promise<number>((resolve) => (answer = resolve));
    acks.add(ids.slice(0, 2));
    acks.sendAhead();
    expect(fake.callsOf('ack').map((c) => c.args[2])).toEqual([ids.slice(0, 2)]);
    let landed = false;
    const waiting = acks.landed().then(() => (landed = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(landed).toBe(false); // the reply is not in
    expect(loop.counters.snapshot().totalAcked).toBe(0);
    answer(2);
    await waiting;
    expect(loop.counters.snapshot().totalAcked).toBe(2);
    acks.sendAhead(); // nothing waiting: no command
    expect(fake.callsOf('ack')).toHaveLength(1);
  });

  it('a failed sendAhead puts its acks back first in line; landed throws it once; a flush sends them', async () => {
    const { loop, fake, ids, acks } = setUp();
    acks.add([ids[0]]);
    fake.fail('ack');
    acks.sendAhead();
    acks.add([ids[1]]); // handled while the XACK was on the wire
    await expect(acks.landed()).rejects.toThrow(/injected ack failure/);
    await expect(acks.landed()).resolves.toBeUndefined(); // thrown once
    expect(loop.counters.snapshot().totalAcked).toBe(0);
    await acks.flush();
    expect(fake.callsOf('ack').map((c) => c.args[2])).toEqual([[ids[0]], [ids[0], ids[1]]]);
    expect(fake.pel(S, G).has(ids[0])).toBe(false);
    expect(fake.pel(S, G).has(ids[1])).toBe(false);
  });

  it('flush waits for the XACK sent ahead before it sends: a step after it finds none of them pending', async () => {
    const { fake, ids, acks } = setUp();
    let answer!: () => void;
    fake.overrides.ack = (stream, group, sent) =>
      new Promise<number>((resolve) => {
        // the first XACK is held until the test answers it; the model runs for both
        answer = () => {
          delete fake.overrides.ack;
          void fake.ack(stream as string, group as string, sent as string[]).then(resolve);
        };
      });
    acks.add([ids[0]]);
    acks.sendAhead();
    acks.add([ids[1]]);
    let flushed = false;
    const flushing = acks.flush().then(() => (flushed = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(flushed).toBe(false);
    expect(fake.callsOf('ack')).toHaveLength(1); // its own XACK waits for the one ahead
    answer();
    await flushing;
    expect(fake.pel(S, G).has(ids[0])).toBe(false);
    expect(fake.pel(S, G).has(ids[1])).toBe(false);
  });

  it('take hands the acks to a caller (sent with a read); putBack puts them before newer ones', () => {
    const { ids, acks } = setUp();
    acks.add([ids[2]]);
    const taken = acks.take();
    expect(taken).toEqual([ids[2]]);
    expect(acks.take()).toEqual([]);
    acks.add([ids[3]]);
    acks.putBack(taken);
    expect(acks.take()).toEqual([ids[2], ids[3]]);
  });

  it('tells its watch when an XACK reply is in, and which ids an XACK failed for', async () => {
    const loop = testLoop();
    const fake = new FakeStreamsClient();
    fake.seedJson(S, 3);
    const ids = fake.deliverTo(S, G, C, 3);
    const told: string[] = [];
    const acks = new AckBuffer(
      loop.context,
      new AckWriter(loop.context, fake),
      { forget: () => undefined },
      {
        watch: {
          acked: (done) => void told.push(`acked ${done.join(',')}`),
          failed: (lost, err) => void told.push(`failed ${lost.join(',')}: ${String(err)}`),
        },
      },
    );
    acks.add([ids[0]]);
    fake.fail('ack');
    await expect(acks.flush()).rejects.toThrow(/injected/);
    acks.add([ids[1]]);
    await acks.flush();
    await acks.send([ids[2]]);
    expect(told).toEqual([
      `failed ${ids[0]}: Error: ERR injected ack failure`,
      `acked ${ids[0]},${ids[1]}`,
      `acked ${ids[2]}`,
    ]);
  });
});
