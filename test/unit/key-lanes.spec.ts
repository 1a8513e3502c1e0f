/** Lanes by key for newerWins (lib/consumer/order/key-lanes.ts): one lane per key, stream order kept. */
import { keyLanes } from '../../lib/consumer/order/key-lanes';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';

const m = (entryId: string, key?: string) =>
  ({ entryId, id: entryId, payload: { key } }) as unknown as StreamMessage<unknown>;
const keyOf = (msg: StreamMessage<unknown>) => (msg.payload as { key?: string }).key;

describe('keyLanes', () => {
  it('entries of one key share a lane in stream order; lanes in the order of their first entry; no key: a lane each', () => {
    const lanes = keyLanes(
      [m('1', 'a'), m('2', 'b'), m('3'), m('4', 'a'), m('5', 'b'), m('6'), m('7', 'a')],
      keyOf,
    );
    expect(lanes.map((lane) => lane.map((x) => x.entryId))).toEqual([
      ['1', '4', '7'],
      ['2', '5'],
      ['3'],
      ['6'],
    ]);
  });

  it('an empty read gives no lane', () => {
    expect(keyLanes([], keyOf)).toEqual([]);
  });
});
