/**
 * The idempotency index key of a stream hashes to the stream's own Cluster slot (the script's
 * keys must never cross slots), whatever the stream's name: with a hash tag, without one, with
 * braces that do not form a tag.
 */
import { keySlot } from '../../lib/redis/connection/cluster-routing';
import { idempotencyKey } from '../../lib/redis/package-keys';

const names = [
  'orders',
  'orders:eu',
  '{orders}:eu',
  'eu:{orders}',
  '{orders}',
  'a{b', // an open brace only: the whole name hashes
  'a{}b', // an empty tag: the whole name hashes, and it holds a '}'
  'a}b', // a closing brace only
  '}{x}', // a tag after a stray '}'
  'x{y}z{w}',
  'ü-stream',
];

describe('idempotencyKey', () => {
  it.each(names)('the index key of %s shares its slot', (stream) => {
    const key = idempotencyKey(stream, '0000000000000000000000ab');
    expect(keySlot(key)).toBe(keySlot(stream));
    expect(key).toContain(':echo-idem:');
    expect(key.endsWith(':0000000000000000000000ab')).toBe(true);
  });

  it('keys of two streams differ, also when they share a hash tag or one is the tag of the other', () => {
    const keys = ['orders', '{orders}', '{orders}:eu', '{orders}:us'].map((s) =>
      idempotencyKey(s, 'id'),
    );
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('the same stream and id always give the same key (a stand-in tag is stable)', () => {
    expect(idempotencyKey('a}b', 'id')).toBe(idempotencyKey('a}b', 'id'));
    expect(idempotencyKey('orders', 'id')).toBe('{orders}:echo-idem::id');
  });
});
