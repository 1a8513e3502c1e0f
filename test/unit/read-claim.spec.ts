/**
 * Reclaim with the read (lib/consumer/read/read-claim.ts): which loops claim along, the counts a
 * read gives itself, and the one CLAIM a shared read's round can carry.
 */
import { commonClaim, readClaimIdleMs, readCounts } from '../../lib/consumer/read/read-claim';
import { testLoop } from '../support/loop-context';

describe('read claim', () => {
  it("a plain stream's loop claims what is idle past its minIdleMs; a partition's loop claims nothing", () => {
    const { context } = testLoop({ minIdleMs: 4000 });
    expect(readClaimIdleMs(context)).toBe(4000);
    expect(readClaimIdleMs({ ...context, partition: { index: 2, generation: 7 } })).toBeUndefined();
  });

  it('the counts a read gave itself, as a reclaim’s; none for a read without them', () => {
    const fields = ['id', 'x', 'data', '1'];
    expect(readCounts([{ entryId: '1-0', fields }])).toBeNull();
    expect(
      readCounts([
        { entryId: '1-0', fields, deliveries: 4 },
        { entryId: '2-0', fields: null, deliveries: 2 },
        { entryId: '3-0', fields, deliveries: 1 },
      ]),
    ).toEqual(
      new Map([
        ['1-0', 4],
        ['2-0', 2],
        ['3-0', 1],
      ]),
    );
  });

  it('a shared round claims along only when all its loops ask the same minIdleMs', () => {
    const asks = (...values: Array<number | undefined>) =>
      values.map((claimIdleMs) => ({ claimIdleMs }));
    expect(commonClaim(asks(30_000, 30_000))).toBe(30_000);
    expect(commonClaim(asks(30_000, 10_000))).toBeUndefined();
    expect(commonClaim(asks(30_000, undefined))).toBeUndefined();
    expect(commonClaim(asks(undefined))).toBeUndefined();
  });
});
