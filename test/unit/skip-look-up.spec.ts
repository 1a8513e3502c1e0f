/**
 * One read's skip look-up (lib/consumer/skip/skip-look-up.ts): it rides with the loop's next XACK, or
 * goes out on its own (read before an XACK took it, or when that XACK failed); every time it
 * goes out is reported to the loop's own records, and closed once.
 */
import { AckRecords } from '../../lib/consumer/settle/ack-records';
import { RecordLookUp } from '../../lib/consumer/skip/skip-look-up';
import type { SkipQuery } from '../../lib/redis/stream-roles';
import type { LookUpTicket } from '../../lib/consumer/skip/skip.types';

const QUERIES: SkipQuery[] = [{ kind: 'acked', id: 'order-1' }];

function setUp(alone: () => Promise<Array<string | null>> = async () => ['order-1']) {
  const own = new AckRecords({ dedupWindowMs: 1000, keyOf: undefined });
  const opened: number[] = [];
  const answered: number[] = [];
  const carried: Array<readonly string[]> = [];
  const mgets: Array<readonly SkipQuery[]> = [];
  const ports = {
    own: {
      lookUpSent: (ids: readonly string[]) => {
        const ticket = own.lookUpSent(ids);
        opened.push(ticket.sent);
        carried.push(ids);
        return ticket;
      },
      lookUpAnswered: (ticket: LookUpTicket) => {
        answered.push(ticket.sent);
        own.lookUpAnswered(ticket);
      },
      missedBy: (ticket: LookUpTicket) => own.missedBy(ticket),
    },
    alone: (queries: readonly SkipQuery[]) => {
      mgets.push(queries);
      return alone();
    },
  };
  return { own, opened, answered, carried, mgets, lookUp: new RecordLookUp(QUERIES, ports) };
}

describe('RecordLookUp', () => {
  it('rides with an XACK: answered by its script, no MGET; closed once', async () => {
    const { own, opened, answered, carried, mgets, lookUp } = setUp();
    own.waitForRide(lookUp);
    expect(own.riding(['1-0'])).toBe(lookUp); // the XACK going out takes it
    expect(own.riding(['2-0'])).toBeUndefined(); // taken once
    expect(carried).toEqual([['1-0']]);
    lookUp.answered([null]);
    expect(await lookUp.read()).toEqual({ found: [null], own: null });
    expect(mgets).toEqual([]);
    lookUp.close();
    lookUp.close();
    expect(opened).toEqual([1]);
    expect(answered).toEqual([1]);
  });

  it('read before an XACK took it: goes out alone, and no XACK takes it after', async () => {
    const { own, mgets, lookUp } = setUp();
    own.waitForRide(lookUp);
    expect((await lookUp.read()).found).toEqual(['order-1']);
    expect(mgets).toEqual([QUERIES]);
    expect(own.riding(['1-0'])).toBeUndefined(); // it went out: it does not board
  });

  it('its XACK failed: it goes out alone at once; both sendings are closed', async () => {
    const { own, opened, answered, mgets, lookUp } = setUp();
    own.waitForRide(lookUp);
    own.riding(['1-0']);
    const answer = lookUp.read(); // waiting for the ride's answer
    lookUp.missed();
    expect((await answer).found).toEqual(['order-1']);
    expect(mgets).toHaveLength(1);
    lookUp.close();
    expect(opened).toEqual([1, 2]);
    expect(answered).toEqual([1, 2]);
  });

  it('a look-up no longer waiting leaves the ride: the next XACK carries nothing', () => {
    const { own, lookUp } = setUp();
    own.waitForRide(lookUp);
    own.leaveRide(lookUp);
    expect(own.riding(['1-0'])).toBeUndefined();
  });

  it('an MGET that fails rejects its records', async () => {
    const { lookUp } = setUp(() => Promise.reject(new Error('ERR down')));
    await expect(lookUp.read()).rejects.toThrow('ERR down');
  });
});
