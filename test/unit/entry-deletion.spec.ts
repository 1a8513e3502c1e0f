/**
 * EntryDeletion (`deleteOnAck`): what it sends along every XACK, and its sweep: where each look
 * starts, the switch of `true` to 'acked-by-all' when another group appears, and a failing look
 * reported once, then its recovery.
 */
import { jest } from '@jest/globals';
import { EntryDeletion } from '../../lib/consumer/settle/entry-deletion';
import type { DeletionSweep, EntryDeletions } from '../../lib/redis/stream-roles';
import { LineLogger, S } from '../support/loop-context';

function sweeps(answers: Array<DeletionSweep | Error>): EntryDeletions & {
  asked: Array<string | null>;
} {
  const asked: Array<string | null> = [];
  return {
    asked,
    sweep: async (stream, after) => {
      expect(stream).toBe(S);
      asked.push(after);
      const next = answers.shift();
      if (next === undefined) throw new Error('no answer left');
      if (next instanceof Error) throw next;
      return next;
    },
  };
}

const context = (logger: LineLogger) => ({ stream: S, where: `H on ${S}/g`, logger });

describe('EntryDeletion', () => {
  it("rides every XACK, handled or dead-lettered: `true` deletes outright, 'acked-by-all' only what no group needs", () => {
    const logger = new LineLogger();
    expect(new EntryDeletion(context(logger), true).alongAck(['1-0', '2-0'])).toEqual({
      kind: 'deleteEntries',
      entryIds: ['1-0', '2-0'],
      ackedByAll: false,
    });
    expect(new EntryDeletion(context(logger), 'acked-by-all').alongAck(['1-0'])).toEqual({
      kind: 'deleteEntries',
      entryIds: ['1-0'],
      ackedByAll: true,
    });
  });

  it('looks on from where its last look ended, and from the oldest again after a short look', async () => {
    const logger = new LineLogger();
    const deletions = sweeps([
      { deleted: 3, next: '5-0', groups: 2 },
      { deleted: 0, next: null, groups: 2 },
      { deleted: 1, next: null, groups: 2 },
    ]);
    const deletion = new EntryDeletion(context(logger), 'acked-by-all', deletions);
    await deletion.look();
    await deletion.look();
    await deletion.look();
    expect(deletions.asked).toEqual([null, '5-0', null]);
    expect(logger.lines).toEqual([]);
  });

  it("`true` becomes 'acked-by-all' (one warning) once the stream has another group", async () => {
    const logger = new LineLogger();
    const deletions = sweeps([
      { deleted: 0, next: null, groups: 1 },
      { deleted: 0, next: null, groups: 2 },
      { deleted: 0, next: null, groups: 2 },
    ]);
    const deletion = new EntryDeletion(context(logger), true, deletions);
    await deletion.look();
    expect(deletion.alongAck(['1-0']).ackedByAll).toBe(false);
    await deletion.look();
    await deletion.look();
    expect(deletion.alongAck(['1-0']).ackedByAll).toBe(true);
    expect(logger.lines).toEqual([
      `warn H on ${S}/g: deleteOnAck is true but ${S} now has 2 groups; entries are deleted once every group acknowledged them ('acked-by-all')`,
    ]);
  });

  it('a failing look is reported once, and its recovery once; it never throws', async () => {
    const logger = new LineLogger();
    const deletions = sweeps([
      new Error('NOPERM'),
      new Error('NOPERM'),
      { deleted: 0, next: null, groups: 1 },
    ]);
    const deletion = new EntryDeletion(context(logger), 'acked-by-all', deletions, 2000);
    await deletion.look();
    await deletion.look();
    await deletion.look();
    expect(logger.lines).toEqual([
      `warn H on ${S}/g: acknowledged entries not deleted (NOPERM); trying again in 2000 ms`,
      `log H on ${S}/g: acknowledged entries are deleted again`,
    ]);
  });

  it('start looks at once, then every interval; stop waits for the look in flight', async () => {
    jest.useFakeTimers();
    try {
      const logger = new LineLogger();
      const deletions = sweeps(
        Array.from({ length: 5 }, () => ({ deleted: 0, next: null, groups: 1 })),
      );
      const deletion = new EntryDeletion(context(logger), true, deletions, 100);
      deletion.start();
      deletion.start();
      await Promise.resolve();
      expect(deletions.asked).toHaveLength(1);
      await jest.advanceTimersByTimeAsync(250);
      expect(deletions.asked).toHaveLength(3);
      await deletion.stop();
      await jest.advanceTimersByTimeAsync(500);
      expect(deletions.asked).toHaveLength(3);
    } finally {
      jest.useRealTimers();
    }
  });
});
