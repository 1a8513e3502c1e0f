/**
 * One read's skip look-up (lib/consumer/skip/skip-look-up.ts): one MGET sent the moment it is made,
 * reported to the loop's own records, and closed once.
 */
import { AckRecords } from '../../lib/consumer/settle/ack-records';
import { RecordLookUp } from '../../lib/consumer/skip/skip-look-up';
import type { SkipQuery } from '../../lib/redis/stream-roles';
import type { LookUpTicket } from '../../lib/consumer/skip/skip.types';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';

const QUERIES: SkipQuery[] = [{ kind: 'acked', id: 'order-1' }];

function setUp(read: () => Promise<Array<string | null>> = async () => ['order-1']) {
  const own = new AckRecords({ dedupWindowMs: 1000, keyOf: undefined });
  const opened: number[] = [];
  const answered: number[] = [];
  const mgets: Array<readonly SkipQuery[]> = [];
  const ports = {
    own: {
      lookUpSent: () => {
        const ticket = own.lookUpSent();
        opened.push(ticket.sent);
        return ticket;
      },
      lookUpAnswered: (ticket: LookUpTicket) => {
        answered.push(ticket.sent);
        own.lookUpAnswered(ticket);
      },
      missedBy: (ticket: LookUpTicket) => own.missedBy(ticket),
    },
    read: (queries: readonly SkipQuery[]) => {
      mgets.push(queries);
      return read();
    },
  };
  return { own, opened, answered, mgets, make: () => new RecordLookUp(QUERIES, ports) };
}

const handledHere = { id: 'order-7', entryId: '7-0' } as StreamMessage<unknown>;

describe('RecordLookUp', () => {
  it('goes out the moment it is made (one MGET); its answer, nothing of its own missed; closed once', async () => {
    const { opened, answered, mgets, make } = setUp();
    const lookUp = make();
    expect(mgets).toEqual([QUERIES]);
    expect(opened).toEqual([1]);
    expect(await lookUp.read()).toEqual({ found: ['order-1'], own: null });
    expect(mgets).toHaveLength(1); // read once, however often its answer is read
    lookUp.close();
    lookUp.close();
    expect(answered).toEqual([1]);
  });

  it('sent before the XACK of an entry handled here: its answer comes with that entry\'s record', async () => {
    const { own, make } = setUp(async () => [null]);
    own.handled([handledHere], ['7-0']);
    const lookUp = make();
    const { found, own: missed } = await lookUp.read();
    expect(found).toEqual([null]);
    expect(missed?.acked).toEqual(new Set(['order-7']));
    lookUp.close();
  });

  it('an MGET that fails rejects its records; closing it still releases what it kept', async () => {
    const { answered, make } = setUp(() => Promise.reject(new Error('ERR down')));
    const lookUp = make();
    await expect(lookUp.read()).rejects.toThrow('ERR down');
    lookUp.close();
    expect(answered).toEqual([1]);
  });
});
