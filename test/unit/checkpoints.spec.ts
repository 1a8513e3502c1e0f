/**
 * Checkpoints of entries (lib/consumer/handle/checkpoints.ts): a first delivery reads nothing, the
 * redeliveries of one read are read in one HMGET, a saved value is JSON, and the XACK (ack buffer,
 * dead-letter path) drops exactly the records this loop knows of.
 */
import { AckWriter } from '../../lib/consumer/settle/ack-writer';
import { AckBuffer } from '../../lib/consumer/settle/ack-buffer';
import { Checkpoints } from '../../lib/consumer/handle/checkpoints';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import type { AlongAck, EntryCheckpoints } from '../../lib/redis/stream-roles';
import { testLoop } from '../support/loop-context';
import { NO_TRANSACTION } from '../../lib/consumer/commit';

class MemoryCheckpoints implements EntryCheckpoints {
  readonly values = new Map<string, string>();
  readonly reads: string[][] = [];
  async save(_stream: string, _group: string, entryId: string, json: string): Promise<void> {
    this.values.set(entryId, json);
  }
  async read(_stream: string, _group: string, ids: readonly string[]) {
    this.reads.push([...ids]);
    return ids.map((id) => this.values.get(id) ?? null);
  }
}

// a message as the triage builds it: its saveCheckpoint calls the loop's Checkpoints.save
let saver: Checkpoints;
const decoded = (entryId: string, attempts: number): StreamMessage => ({
  id: entryId,
  entryId,
  stream: 'orders',
  group: 'g',
  consumer: 'c1',
  payload: {},
  attempts,
  signal: new AbortController().signal,
  saveCheckpoint: (value) => saver.save(entryId, value),
  tx: NO_TRANSACTION,
});

describe('Checkpoints', () => {
  it('reads nothing for first deliveries, and the redeliveries of a read in one call', async () => {
    const store = new MemoryCheckpoints();
    store.values.set('2-0', '{"step":2}');
    store.values.set('4-0', 'not json');
    const loop = testLoop();
    const checkpoints = (saver = new Checkpoints(loop.context, store));
    const fresh = [decoded('1-0', 1), decoded('5-0', 1)];
    const first = await checkpoints.attach(fresh);
    expect(store.reads).toEqual([]);
    expect(first).toBe(fresh); // a read of first deliveries: no copy
    expect(first.map((m) => m.checkpoint)).toEqual([undefined, undefined]);

    const again = await checkpoints.attach([
      decoded('1-0', 1),
      decoded('2-0', 2),
      decoded('3-0', 3),
      decoded('4-0', 2),
    ]);
    expect(store.reads).toEqual([['2-0', '3-0', '4-0']]);
    expect(again.map((m) => m.checkpoint)).toEqual([undefined, { step: 2 }, undefined, undefined]);
    expect('checkpoint' in again[0]).toBe(false);
    expect(loop.logger.has(/checkpoint of entry 4-0 is not JSON/)).toBe(true);
  });

  it('saves JSON, refuses what JSON cannot hold, and drops along the XACK only the records it knows', async () => {
    const store = new MemoryCheckpoints();
    const checkpoints = (saver = new Checkpoints(testLoop().context, store));
    const [a, b] = await checkpoints.attach([decoded('1-0', 1), decoded('2-0', 1)]);
    expect(checkpoints.alongAck(['1-0', '2-0'])).toBeNull(); // nothing saved: no write
    await a.saveCheckpoint({ at: [1, 2] });
    expect(store.values.get('1-0')).toBe('{"at":[1,2]}');
    await expect(b.saveCheckpoint(undefined)).rejects.toThrow(TypeError);
    await expect(b.saveCheckpoint(() => 1)).rejects.toThrow(/needs a JSON value/);
    expect(checkpoints.alongAck(['1-0', '2-0'])).toEqual({
      kind: 'dropCheckpoints',
      entryIds: ['1-0'],
    });
    expect(checkpoints.alongAck(['1-0'])).toBeNull(); // forgotten once dropped
  });

  it('an entry leaving without an ack (dead letter, deleted) drops its record, known here or not', async () => {
    const checkpoints = (saver = new Checkpoints(testLoop().context, new MemoryCheckpoints()));
    const [a] = await checkpoints.attach([decoded('1-0', 1)]);
    await a.saveCheckpoint(1);
    expect(checkpoints.alongExit(['1-0', '9-0'])).toEqual({
      kind: 'dropCheckpoints',
      entryIds: ['1-0', '9-0'],
    });
    expect(checkpoints.alongAck(['1-0'])).toBeNull(); // forgotten
    expect(checkpoints.alongExit([])).toBeNull();
    expect(new Checkpoints(testLoop().context, undefined).alongExit(['1-0'])).toBeNull();
  });

  it('a client without checkpoints saves nothing and reads nothing', async () => {
    const checkpoints = (saver = new Checkpoints(testLoop().context, undefined));
    const [m] = await checkpoints.attach([decoded('1-0', 3)]);
    await m.saveCheckpoint(1);
    expect(m.checkpoint).toBeUndefined();
    expect(checkpoints.alongAck(['1-0'])).toBeNull();
  });
});

describe('AckBuffer along writes', () => {
  it('sends the writes of its along hooks with the XACK, none when they have nothing', async () => {
    const sent: Array<{ ids: readonly string[]; along: readonly AlongAck[] | undefined }> = [];
    const client = {
      ack: async (_s: string, _g: string, ids: readonly string[], along?: readonly AlongAck[]) => {
        sent.push({ ids, along });
        return ids.length;
      },
    };
    const hook = {
      alongAck: (ids: readonly string[]): AlongAck | null =>
        ids.includes('2-0') ? { kind: 'dropCheckpoints', entryIds: ['2-0'] } : null,
    };
    const context = testLoop().context;
    const acks = new AckBuffer(context, new AckWriter(context, client, [hook]), {
      forget: () => undefined,
    });
    await acks.send(['1-0']);
    await acks.send(['1-0', '2-0']);
    expect(sent).toEqual([
      { ids: ['1-0'], along: [] },
      { ids: ['1-0', '2-0'], along: [{ kind: 'dropCheckpoints', entryIds: ['2-0'] }] },
    ]);
  });
});
