/**
 * Branded ids (docs/publishing.md): strictly increasing as plain strings in mint order (also within one ms
 * and across a clock step backwards), carrying their mint time, unique across generators.
 */
import {
  BrandedIdGenerator,
  brandedId,
  brandedIdTime,
  createBrandedIdGenerator,
  isBrandedId,
} from '../../lib/codec/branded-id';

/** A clock the test moves by hand. */
function fakeClock(start: number) {
  let now = start;
  return {
    now: () => now,
    set: (ms: number) => (now = ms),
  };
}

function expectStrictlyIncreasing(ids: readonly string[]): void {
  for (let i = 1; i < ids.length; i++) {
    if (!(ids[i - 1] < ids[i])) {
      throw new Error(`ids[${i - 1}] = ${ids[i - 1]} is not < ids[${i}] = ${ids[i]}`);
    }
  }
}

describe('branded ids', () => {
  it('are 24 characters of [0-9a-z]', () => {
    const id = brandedId();
    expect(id).toMatch(/^[0-9a-z]{24}$/);
    expect(isBrandedId(id)).toBe(true);
  });

  it('100k ids from the real clock sort to mint order, all distinct', () => {
    const next = createBrandedIdGenerator();
    const minted: string[] = [];
    for (let i = 0; i < 100_000; i++) minted.push(next());
    const sorted = [...minted].sort();
    expect(sorted).toEqual(minted);
    expect(new Set(minted).size).toBe(minted.length);
    expectStrictlyIncreasing(minted);
  });

  it('the process-wide brandedId() is strictly increasing too', () => {
    const minted = Array.from({ length: 10_000 }, () => brandedId());
    expectStrictlyIncreasing(minted);
  });

  it('strictly increase within one millisecond', () => {
    const clock = fakeClock(1_700_000_000_000);
    const gen = new BrandedIdGenerator({ now: clock.now });
    const minted = Array.from({ length: 5000 }, () => gen.next());
    expectStrictlyIncreasing(minted);
    for (const id of minted) expect(brandedIdTime(id).getTime()).toBe(1_700_000_000_000);
  });

  it('keep increasing when the clock steps backwards, never minting a lower time', () => {
    const clock = fakeClock(1_700_000_000_500);
    const gen = new BrandedIdGenerator({ now: clock.now });
    const minted: string[] = [gen.next(), gen.next()];
    clock.set(1_700_000_000_000); // NTP step back by 500 ms
    for (let i = 0; i < 100; i++) minted.push(gen.next());
    clock.set(1_699_999_000_000); // and again, further
    minted.push(gen.next());
    expectStrictlyIncreasing(minted);
    for (const id of minted) expect(brandedIdTime(id).getTime()).toBe(1_700_000_000_500);
    clock.set(1_700_000_000_501); // the clock catches up: time moves on, sequence restarts
    const after = gen.next();
    expect(after > minted[minted.length - 1]).toBe(true);
    expect(brandedIdTime(after).getTime()).toBe(1_700_000_000_501);
  });

  it('sorted == minted order under a clock that jumps around', () => {
    const times = [5, 5, 9, 3, 3, 9, 10, 2, 11, 11, 11, 7, 20];
    let t = 0;
    const gen = new BrandedIdGenerator({
      now: () => 1_600_000_000_000 + times[t++ % times.length],
    });
    const minted = Array.from({ length: times.length * 50 }, () => gen.next());
    expect([...minted].sort()).toEqual(minted);
    expectStrictlyIncreasing(minted);
  });

  it('brandedIdTime round-trips the mint time', () => {
    for (const ms of [0, 1, 1_700_000_000_123, Date.UTC(2999, 11, 31, 23, 59, 59, 999)]) {
      const gen = new BrandedIdGenerator({ now: () => ms });
      expect(brandedIdTime(gen.next()).getTime()).toBe(ms);
    }
    const before = Date.now();
    const time = brandedIdTime(brandedId()).getTime();
    expect(time).toBeGreaterThanOrEqual(before - 1000);
    expect(time).toBeLessThanOrEqual(Date.now() + 1000);
  });

  it('brandedIdTime rejects what is not a branded id with a TypeError', () => {
    const bad: unknown[] = [
      '',
      'abc',
      '1700000000000-0',
      'KXQ3B1C2D4000000A1B2C3D4',
      'kxq3b1c2d4000000a1b2c3d4x',
      'kxq3b1c2d4-00000a1b2c3d4',
      42,
      null,
      undefined,
    ];
    for (const value of bad) {
      expect(() => brandedIdTime(value as string)).toThrow(TypeError);
    }
    expect(() => brandedIdTime('nope')).toThrow(/not a branded id/);
  });

  it('two generators never collide, even on the same millisecond', () => {
    const clock = fakeClock(1_700_000_000_000);
    const a = new BrandedIdGenerator({ now: clock.now });
    const b = new BrandedIdGenerator({ now: clock.now });
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i++) {
      if (i % 1000 === 0) clock.set(clock.now() + 1);
      for (const id of [a.next(), b.next()]) {
        expect(seen.has(id)).toBe(false);
        seen.add(id);
      }
    }
    expect(seen.size).toBe(40_000);
  });

  it('the node part is random per generator and fixed within one', () => {
    const nodes = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const gen = new BrandedIdGenerator();
      const first = gen.next();
      expect(gen.next().slice(16)).toBe(first.slice(16));
      nodes.add(first.slice(16));
    }
    expect(nodes.size).toBe(1000);
  });

  it('takes a node part from options.random, and checks it', () => {
    const gen = new BrandedIdGenerator({ now: () => 36 ** 3, random: () => 'zz00zz00' });
    expect(gen.next()).toBe('0000001000000000zz00zz00');
    expect(() => new BrandedIdGenerator({ random: () => 'short' })).toThrow(TypeError);
    expect(() => new BrandedIdGenerator({ random: () => 'UPPERCAS' })).toThrow(TypeError);
  });

  it('rejects a clock that returns garbage', () => {
    const gen = new BrandedIdGenerator({ now: () => Number.NaN });
    expect(() => gen.next()).toThrow(RangeError);
    const negative = new BrandedIdGenerator({ now: () => -1 });
    expect(() => negative.next()).toThrow(RangeError);
  });
});
