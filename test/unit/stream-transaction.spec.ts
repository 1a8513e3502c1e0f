/**
 * EntryTransaction (`m.tx` of an exactly-once handler): what each method records for the commit,
 * that a refused call records nothing, the Cluster slot check, and that each attempt starts from
 * no writes with the same derived output ids (a replay's outputs are seen once downstream).
 */
import { derivedBrandedId } from '../../lib/codec/branded-id';
import { fieldsCodec, jsonCodec } from '../../lib/codec/codecs';
import { EntryTransaction, NO_TRANSACTION, transactionScope } from '../../lib/consumer/commit';
import type { StreamCodec } from '../../lib/interfaces/codec.interface';
import { keySlot } from '../../lib/redis/connection/cluster-routing';

/** A branded id minted at 1700000000000 by the node 'abcd1234'. */
const SOURCE_ID = '00loyw3v28000000abcd1234';

function transaction(cluster = false, sourceStream = 'payments'): EntryTransaction {
  return new EntryTransaction(transactionScope(sourceStream, 'g', cluster, jsonCodec), SOURCE_ID);
}

/** Expects `call` to throw a TypeError matching `message`, and `tx` to have recorded nothing. */
function expectRefused(tx: EntryTransaction, call: () => unknown, message: RegExp): void {
  const before = [...tx.writes];
  expect(call).toThrow(TypeError);
  expect(call).toThrow(message);
  expect(tx.writes).toEqual(before);
}

describe('EntryTransaction', () => {
  it('records each write in call order, writing nothing itself', () => {
    const tx = transaction();
    tx.set('a', 'x');
    tx.set('b', '', { pxMs: 5000 });
    tx.incrBy('c', -7);
    tx.hset('d', 'f', 'v');
    tx.del('e');
    expect(tx.writes).toEqual([
      { op: 'set', key: 'a', value: 'x' },
      { op: 'set', key: 'b', value: '', pxMs: 5000 },
      { op: 'incrBy', key: 'c', by: -7 },
      { op: 'hset', key: 'd', field: 'f', value: 'v' },
      { op: 'del', key: 'e' },
    ]);
  });

  it("publish records an XADD of the codec's fields under an id derived by position", () => {
    const tx = transaction();
    const first = tx.publish('ledger', { amount: 5 });
    const second = tx.publish('ledger', { amount: 6 });
    expect(first).toBe(derivedBrandedId(SOURCE_ID, 0));
    expect(second).toBe(derivedBrandedId(SOURCE_ID, 1));
    expect(tx.writes).toEqual([
      { op: 'xadd', key: 'ledger', fields: ['id', first, 'data', '{"amount":5}'] },
      { op: 'xadd', key: 'ledger', fields: ['id', second, 'data', '{"amount":6}'] },
    ]);
  });

  it("keeps a given id, and uses the call's codec over the default", () => {
    const tx = transaction();
    expect(tx.publish('ledger', { a: '1' }, { id: 'upstream-1', codec: fieldsCodec })).toBe(
      'upstream-1',
    );
    // the given id took position 0: the next derived id is position 1's
    expect(tx.publish('ledger', 2)).toBe(derivedBrandedId(SOURCE_ID, 1));
    expect(tx.writes[0]).toEqual({
      op: 'xadd',
      key: 'ledger',
      fields: ['id', 'upstream-1', 'a', '1'],
    });
  });

  it('a payload the codec rejects throws at once and records nothing, nor takes a position', () => {
    const tx = transaction();
    expect(() => tx.publish('ledger', undefined)).toThrow(TypeError);
    const failing: StreamCodec<unknown> = {
      encode: () => {
        throw new Error('no');
      },
      decode: () => null,
    };
    expect(() => tx.publish('ledger', 1, { codec: failing })).toThrow('no');
    expect(tx.writes).toEqual([]);
    expect(tx.publish('ledger', 1)).toBe(derivedBrandedId(SOURCE_ID, 0));
  });

  it('begin() clears the writes and the publish position: a retry derives the same ids', () => {
    const tx = transaction();
    tx.begin();
    const id = tx.publish('ledger', 1);
    tx.incrBy('n', 1);
    const firstAttempt = tx.writes;
    tx.begin();
    expect(tx.writes).toEqual([]);
    expect(firstAttempt).toHaveLength(2);
    expect(tx.publish('ledger', 1)).toBe(id);
  });

  it('refuses bad arguments with a TypeError naming the method and the argument', () => {
    const tx = transaction();
    tx.set('kept', 'v');
    const bad = (value: unknown) => value as never;
    expectRefused(
      tx,
      () => tx.set('', 'v'),
      /StreamTransaction\.set\(\): key must be a non-empty string, got ''/,
    );
    expectRefused(
      tx,
      () => tx.set(bad(7), 'v'),
      /set\(\): key must be a non-empty string, got number 7/,
    );
    expectRefused(tx, () => tx.set('k', bad(1)), /set\(\): value must be a string, got number 1/);
    expectRefused(
      tx,
      () => tx.set('k', 'v', { pxMs: 0 }),
      /set\(\): option 'pxMs' must be a positive integer/,
    );
    expectRefused(tx, () => tx.set('k', 'v', { pxMs: 1.5 }), /pxMs/);
    expectRefused(tx, () => tx.set('k', 'v', bad({ ex: 1 })), /set\(\): unknown option 'ex'/);
    expectRefused(tx, () => tx.set('k', 'v', bad('px')), /set\(\): options must be an object/);
    expectRefused(
      tx,
      () => tx.incrBy('k', 1.5),
      /StreamTransaction\.incrBy\(\): by must be an integer/,
    );
    expectRefused(tx, () => tx.incrBy('k', 1e15 + 1), /incrBy\(\): by must be an integer/);
    expectRefused(tx, () => tx.incrBy('k', bad('1')), /incrBy\(\): by must be an integer/);
    expectRefused(
      tx,
      () => tx.hset('k', bad(undefined), 'v'),
      /hset\(\): field must be a string, got undefined/,
    );
    expectRefused(
      tx,
      () => tx.hset('k', 'f', bad(null)),
      /hset\(\): value must be a string, got null/,
    );
    expectRefused(tx, () => tx.del(bad(undefined)), /del\(\): key must be a non-empty string/);
    expectRefused(tx, () => tx.publish('', 1), /publish\(\): stream must be a non-empty string/);
    expectRefused(
      tx,
      () => tx.publish('s', 1, { id: '' }),
      /publish\(\): option 'id' must be a non-empty string/,
    );
    expectRefused(
      tx,
      () => tx.publish('s', 1, bad({ key: 'k' })),
      /publish\(\): unknown option 'key'/,
    );
    expectRefused(
      tx,
      () => tx.publish('s', 1, bad({ codec: 'json' })),
      /publish\(\): option 'codec' must be a codec/,
    );
    tx.incrBy('k', 1e15);
    tx.incrBy('k', -1e15);
    expect(tx.writes).toHaveLength(3);
  });

  it("slotTag is the source stream's tag", () => {
    expect(transaction(false, 'payments').slotTag).toBe('{payments}');
    expect(transaction(false, '{payments}:p:3').slotTag).toBe('{payments}');
  });

  describe('on a Cluster', () => {
    it("takes keys and streams in the source stream's slot", () => {
      const tx = transaction(true);
      tx.set('{payments}:balance:7', '1');
      tx.incrBy('{payments}:total', 3);
      tx.publish('{payments}:ledger', 1);
      tx.publish('payments', 2);
      expect(tx.writes.map((write) => write.key)).toEqual([
        '{payments}:balance:7',
        '{payments}:total',
        '{payments}:ledger',
        'payments',
      ]);
    });

    it('refuses a key of another slot, naming the key and the tag to use', () => {
      const tx = transaction(true);
      expect(keySlot('balance:7')).not.toBe(keySlot('payments'));
      expectRefused(
        tx,
        () => tx.set('balance:7', '1'),
        /^StreamTransaction\.set\(\): key 'balance:7' is not in the hash slot of stream 'payments'; put the tag \{payments\} in it \('\{payments\}:balance:7'\)$/,
      );
      expectRefused(
        tx,
        () => tx.hset('{users}:7', 'f', 'v'),
        /hset\(\): key '\{users\}:7' .* \{payments\}/,
      );
      expectRefused(tx, () => tx.incrBy('n', 1), /incrBy\(\): key 'n'/);
      expectRefused(tx, () => tx.del('n'), /del\(\): key 'n'/);
      expect(tx.writes).toEqual([]);
    });

    it("writes a publish to a stream of another slot to the outbox in the source's slot", () => {
      const told: string[] = [];
      const scope = transactionScope('payments', 'billing', true, jsonCodec, () => told.push('x'));
      const tx = new EntryTransaction(scope, SOURCE_ID);
      expect(keySlot('ledger')).not.toBe(keySlot('payments'));
      const first = tx.publish('ledger', { n: 1 });
      const second = tx.publish('{payments}:audit', { n: 2 });
      expect([first, second]).toEqual([
        derivedBrandedId(SOURCE_ID, 0),
        derivedBrandedId(SOURCE_ID, 1),
      ]);
      expect(tx.writes).toEqual([
        {
          op: 'xadd',
          key: '{payments}:echo-outbox:billing',
          fields: ['echo-target', 'ledger', 'echo-id', first, 'id', first, 'data', '{"n":1}'],
        },
        { op: 'xadd', key: '{payments}:audit', fields: ['id', second, 'data', '{"n":2}'] },
      ]);
      expect(keySlot('{payments}:echo-outbox:billing')).toBe(keySlot('payments'));
      expect(told).toEqual(['x']);
      // a bad name is refused before it reaches the outbox
      expectRefused(tx, () => tx.publish('', 1), /publish\(\): stream must be a non-empty string/);
    });

    it("uses a partition stream's tag", () => {
      const tx = transaction(true, '{orders}:p:2');
      expect(tx.slotTag).toBe('{orders}');
      tx.del('{orders}:x');
      expectRefused(
        tx,
        () => tx.del('orders:x'),
        /put the tag \{orders\} in it \('\{orders\}:orders:x'\)/,
      );
    });
  });

  it('checks no slot without a Cluster', () => {
    const tx = transaction(false);
    tx.set('balance:7', '1');
    tx.publish('ledger', 1);
    expect(tx.writes).toHaveLength(2);
  });
});

describe('NO_TRANSACTION (m.tx of a handler without exactlyOnce)', () => {
  it('refuses every write, naming the option that enables it', () => {
    expect(() => NO_TRANSACTION.publish('out', {})).toThrow(TypeError);
    expect(() => NO_TRANSACTION.incrBy('n', 1)).toThrow(/set exactlyOnce: true/);
    expect(() => NO_TRANSACTION.set('k', 'v')).toThrow(/StreamTransaction\.set/);
    expect(() => NO_TRANSACTION.hset('h', 'f', 'v')).toThrow(TypeError);
    expect(() => NO_TRANSACTION.del('k')).toThrow(TypeError);
    expect(() => NO_TRANSACTION.slotTag).toThrow(TypeError);
  });
});
