/**
 * slotTagOf: the hash tag a key must carry to share a stream's Cluster slot (the keys an
 * exactly-once handler writes), whatever the stream's name.
 */
import { keySlot } from '../../lib/redis/connection/cluster-routing';
import { keyInSlotOf, slotKeyNextTo, slotTagOf } from '../../lib/redis/package-keys';

describe('slotTagOf', () => {
  it("is the stream's own tag when it has one", () => {
    expect(slotTagOf('{orders}:eu')).toBe('{orders}');
    expect(slotTagOf('eu:{orders}')).toBe('{orders}');
    expect(slotTagOf('{orders}')).toBe('{orders}');
    expect(slotTagOf('x{y}z{w}')).toBe('{y}');
  });

  it('is the whole name in braces for a name without a tag', () => {
    expect(slotTagOf('orders')).toBe('{orders}');
    expect(slotTagOf('orders:p:3')).toBe('{orders:p:3}');
    expect(slotTagOf('a{b')).toBe('{a{b}');
  });

  it('is a stand-in tag of the same slot for a name with a } but no tag, the same each time', () => {
    for (const stream of ['a}b', 'a{}b']) {
      const tag = slotTagOf(stream);
      expect(tag).toMatch(/^\{echo-slot-\d+\}$/);
      expect(slotTagOf(stream)).toBe(tag);
    }
  });

  it.each([
    'orders',
    'orders:eu',
    '{orders}:eu',
    'eu:{orders}',
    'a{b',
    'a{}b',
    'a}b',
    '}{x}',
    'ü-stream',
  ])(
    'a key carrying the tag of %s shares its slot, and the package keys start with it',
    (stream) => {
      const tag = slotTagOf(stream);
      expect(keySlot(`${tag}:balance:7`)).toBe(keySlot(stream));
      expect(keyInSlotOf(stream, 'echo-idem', 'id').startsWith(`${tag}:echo-idem:`)).toBe(true);
      expect(keySlot(slotKeyNextTo(stream, ':echo-paused:g'))).toBe(keySlot(stream));
    },
  );
});
