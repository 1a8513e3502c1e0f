/**
 * The one XACK writer of a loop (lib/consumer/settle/ack-writer.ts): what rides with an XACK is
 * decided there for every path (a handled entry, a dead letter, a deleted entry).
 */
import { AckWriter } from '../../lib/consumer/settle/ack-writer';
import type { AlongAck, SkipRecord } from '../../lib/redis/stream-roles';
import { testLoop } from '../support/loop-context';

/** A client that records each XACK it is asked for and how. */
function recordingClient(withScript: boolean) {
  const calls: Array<{
    how: 'ack' | 'script';
    ids: readonly string[];
    along: readonly AlongAck[];
    records?: readonly SkipRecord[];
  }> = [];
  const client = {
    ack: (_s: string, _g: string, ids: readonly string[], along: readonly AlongAck[] = []) => {
      calls.push({ how: 'ack', ids, along });
      return Promise.resolve(ids.length);
    },
    ackRecording: withScript
      ? (
          _s: string,
          _g: string,
          ids: readonly string[],
          records: readonly SkipRecord[],
          along: readonly AlongAck[] = [],
        ) => {
          calls.push({ how: 'script', ids, along, records });
          return Promise.resolve(ids.length);
        }
      : undefined,
  };
  return { client, calls };
}

const checkpoints = {
  alongAck: (ids: readonly string[]): AlongAck | null =>
    ids.includes('2-0') ? { kind: 'dropCheckpoints', entryIds: ['2-0'] } : null,
  alongExit: (ids: readonly string[]): AlongAck => ({
    kind: 'dropCheckpoints',
    entryIds: [...ids],
  }),
};

describe('AckWriter', () => {
  it('a handled entry: a plain XACK with its along writes; with records: one script call', async () => {
    const { client, calls } = recordingClient(true);
    const writer = new AckWriter(testLoop().context, client, [checkpoints]);
    await writer.handled(['1-0', '2-0']);
    const record: SkipRecord = { kind: 'acked', id: 'b1', ttlMs: 1000 };
    await writer.handled(['3-0'], [record]);
    expect(calls).toEqual([
      { how: 'ack', ids: ['1-0', '2-0'], along: [{ kind: 'dropCheckpoints', entryIds: ['2-0'] }] },
      { how: 'script', ids: ['3-0'], along: [], records: [record] },
    ]);
  });

  it('an entry that leaves without a handler (dead letter, deleted): its exit writes, whatever the loop knew', async () => {
    const { client, calls } = recordingClient(true);
    const writer = new AckWriter(testLoop().context, client, [
      checkpoints,
      { alongAck: () => ({ kind: 'dropCheckpoints', entryIds: ['other'] }) },
    ]);
    await writer.exited(['5-0']);
    expect(calls).toEqual([
      {
        how: 'ack',
        ids: ['5-0'],
        along: [
          { kind: 'dropCheckpoints', entryIds: ['5-0'] },
          // a source without exit writes sends its ack writes
          { kind: 'dropCheckpoints', entryIds: ['other'] },
        ],
      },
    ]);
  });

  it('a client without the script: records are not sent, the XACK is plain', async () => {
    const { client, calls } = recordingClient(false);
    const writer = new AckWriter(testLoop().context, client);
    await writer.handled(['1-0'], [{ kind: 'acked', id: 'b1', ttlMs: 1000 }]);
    expect(calls).toEqual([{ how: 'ack', ids: ['1-0'], along: [] }]);
  });
});

describe('AckWriter with deleteOnAck', () => {
  const deletion = {
    alongAck: (ids: readonly string[]): AlongAck => ({
      kind: 'deleteEntries',
      entryIds: [...ids],
      ackedByAll: false,
    }),
  };

  it('handled and exiting entries: the deletion rides their XACK', async () => {
    const { client, calls } = recordingClient(false);
    const writer = new AckWriter(testLoop().context, client, [deletion]);
    await writer.handled(['1-0']);
    await writer.exited(['2-0']);
    expect(calls.map((c) => c.along)).toEqual([
      [{ kind: 'deleteEntries', entryIds: ['1-0'], ackedByAll: false }],
      [{ kind: 'deleteEntries', entryIds: ['2-0'], ackedByAll: false }],
    ]);
  });

  it('exactly-once commits: no deletion rides them (a fenced commit leaves its entry to its new owner), the checkpoints still do', async () => {
    const committedAlong: Array<readonly AlongAck[]> = [];
    const client = {
      ...recordingClient(false).client,
      commits: {
        cluster: false,
        commit: (
          _s: string,
          _g: string,
          _c: string,
          commits: readonly { entryId: string }[],
          along: readonly AlongAck[] = [],
        ) => {
          committedAlong.push(along);
          return Promise.resolve(commits.map(() => ({ kind: 'committed' as const })));
        },
      },
    };
    const writer = new AckWriter(testLoop().context, client as never, [checkpoints, deletion]);
    await writer.committed([{ entryId: '2-0', deliveries: 1, writes: [] }]);
    expect(committedAlong).toEqual([[{ kind: 'dropCheckpoints', entryIds: ['2-0'] }]]);
  });
});
