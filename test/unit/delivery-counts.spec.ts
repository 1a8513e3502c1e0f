/** Delivery counts of held entries from XPENDING ranges (lib/consumer/handle/delivery-counts.ts). */
import { deliveryCounts } from '../../lib/consumer/handle/delivery-counts';
import { FakeStreamsClient } from '../support/fake-streams-client';
import { C, G, S } from '../support/loop-context';

const where = { stream: S, group: G, consumer: C };

describe('deliveryCounts', () => {
  it('one XPENDING range of the batch, for this consumer only', async () => {
    const fake = new FakeStreamsClient();
    fake.seedJson(S, 3);
    const ids = fake.deliverTo(S, G, C, 3);
    await fake.claim(S, G, C, 0, [ids[1]]);
    fake.calls.length = 0;
    const entries = await fake.readGroup(S, G, C, 10, '0');
    const counts = await deliveryCounts(where, fake, entries);
    expect(counts).toEqual(
      new Map([
        [ids[0], 2],
        [ids[1], 3],
        [ids[2], 2],
      ]),
    );
    expect(fake.callsOf('pending').map((c) => c.args[2])).toEqual([
      { start: ids[0], end: ids[2], count: 3, consumer: C },
    ]);
  });

  it('pages on when the range holds other pending entries of ours, until every entry is counted', async () => {
    const fake = new FakeStreamsClient();
    fake.seedJson(S, 5);
    const ids = fake.deliverTo(S, G, C, 5);
    const entries = (await fake.range(S, '-', '+', 10)).filter((_, i) => i === 0 || i === 4);
    const counts = await deliveryCounts(where, fake, entries);
    expect(counts.get(ids[0])).toBe(1);
    expect(counts.get(ids[4])).toBe(1);
    expect(fake.callsOf('pending').map((c) => (c.args[2] as { start: string }).start)).toEqual([
      ids[0],
      `(${ids[1]}`,
      `(${ids[3]}`,
    ]);
  });

  it('no entries: no command', async () => {
    const fake = new FakeStreamsClient();
    expect(await deliveryCounts(where, fake, [])).toEqual(new Map());
    expect(fake.calls).toEqual([]);
  });
});
