import { AwaitingAcks } from '../../lib/consumer/order/awaiting-acks';

/** Releases `acked` and returns the keys released, in order. */
function release(awaiting: AwaitingAcks, acked: string[]): string[] {
  const keys: string[] = [];
  awaiting.release(acked, (key) => keys.push(key));
  return keys;
}

describe('AwaitingAcks', () => {
  it('releases the entries a reply names, in the order they joined, and nothing else', () => {
    const awaiting = new AwaitingAcks();
    awaiting.push('1-1', 'a');
    awaiting.push('1-2', 'b');
    awaiting.push('1-3', 'a');
    expect(release(awaiting, ['1-1', '1-2'])).toEqual(['a', 'b']);
    expect(awaiting.size).toBe(1);
    expect(release(awaiting, ['9-9'])).toEqual([]);
    expect(release(awaiting, ['1-3'])).toEqual(['a']);
    expect(awaiting.size).toBe(0);
  });

  it('ids of entries without a key, and a reply out of order, release exactly the entries named', () => {
    const awaiting = new AwaitingAcks();
    for (let i = 1; i <= 4; i++) awaiting.push(`1-${i}`, `k${i}`);
    // a later XACK answered first (another connection), with an id this gate never awaited
    expect(release(awaiting, ['0-7', '1-3'])).toEqual(['k3']);
    expect(awaiting.size).toBe(3);
    expect(release(awaiting, ['1-4', '1-1', '0-8'])).toEqual(['k1', 'k4']);
    expect(release(awaiting, ['1-2'])).toEqual(['k2']);
    expect(awaiting.size).toBe(0);
  });

  it('an id awaited twice is released twice only when the reply names it twice', () => {
    const awaiting = new AwaitingAcks();
    awaiting.push('1-1', 'a');
    awaiting.push('1-1', 'a');
    expect(release(awaiting, ['1-1'])).toEqual(['a']);
    expect(awaiting.size).toBe(1);
    expect(release(awaiting, ['1-1'])).toEqual(['a']);
    expect(awaiting.size).toBe(0);
  });

  it('stays exact across many replies in order (its storage compacts behind the front)', () => {
    const awaiting = new AwaitingAcks();
    const all: string[] = [];
    const released: string[] = [];
    // each reply names the oldest 100 awaited, so 10 of every round wait for the next reply: the
    // front moves past 1,024 entries with some still awaited behind it
    for (let round = 0; round < 30; round++) {
      for (let i = 0; i < 100; i++) {
        const id = `1-${all.length}`;
        all.push(id);
        awaiting.push(id, `k${id}`);
      }
      const oldest = all.slice(Math.max(0, round * 100 - 10), round * 100 + 90);
      awaiting.release(oldest, (key) => released.push(key));
      expect(awaiting.size).toBe(10);
    }
    expect(released).toEqual(all.slice(0, 2990).map((id) => `k${id}`));
    expect(release(awaiting, all.slice(2990))).toEqual(all.slice(2990).map((id) => `k${id}`));
    expect(awaiting.size).toBe(0);
  });
});
