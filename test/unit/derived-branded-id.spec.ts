/**
 * Derived branded ids (the outputs of an exactly-once handler): the same on every replay, valid
 * branded ids carrying the source's time, and ordered like their sources and positions, so that
 * downstream `dedup` sees a replayed output once and `newerWins` never takes a later entry's
 * output for a stale one.
 */
import {
  BrandedIdGenerator,
  brandedId,
  brandedIdTime,
  derivedBrandedId,
  isBrandedId,
} from '../../lib/codec/branded-id';

const T0 = 1_700_000_000_000;

/** A generator with a fixed node part and a clock the test sets. */
function generator(node: string, now: () => number = () => T0): BrandedIdGenerator {
  return new BrandedIdGenerator({ now, random: () => node });
}

function expectStrictlyIncreasing(ids: readonly string[]): void {
  for (let i = 1; i < ids.length; i++) {
    if (!(ids[i - 1] < ids[i])) {
      throw new Error(`ids[${i - 1}] = ${ids[i - 1]} is not < ids[${i}] = ${ids[i]}`);
    }
  }
}

describe('derivedBrandedId', () => {
  it('is deterministic: the same source and position give the same id', () => {
    const source = brandedId();
    expect(derivedBrandedId(source, 3)).toBe(derivedBrandedId(source, 3));
    expect(derivedBrandedId('1700000000000-5', 3)).toBe(derivedBrandedId('1700000000000-5', 3));
  });

  it('is a branded id carrying the source time', () => {
    const source = generator('abcdefgh').next();
    for (const position of [0, 1, 35, 36, 46_655]) {
      const id = derivedBrandedId(source, position);
      expect(id).toHaveLength(24);
      expect(isBrandedId(id)).toBe(true);
      expect(brandedIdTime(id).getTime()).toBe(T0);
      expect(id.slice(0, 16)).toBe(source.slice(0, 16));
    }
  });

  it('outputs of one source are distinct and sort by position', () => {
    const source = brandedId();
    const ids = Array.from({ length: 2000 }, (_, position) => derivedBrandedId(source, position));
    expectStrictlyIncreasing(ids);
    expect(derivedBrandedId(source, 46_654) < derivedBrandedId(source, 46_655)).toBe(true);
  });

  it("a later source's outputs sort after every output of an earlier one", () => {
    let now = T0;
    const gen = generator('k3v9q2m1', () => now);
    const sources = [gen.next(), gen.next(), ((now += 1), gen.next()), ((now += 5000), gen.next())];
    const outputs = sources.flatMap((source) =>
      [0, 1, 46_655].map((position) => derivedBrandedId(source, position)),
    );
    expectStrictlyIncreasing(outputs);
  });

  it('sources of two processes minted in the same millisecond keep their order', () => {
    const a = generator('a0000000').next();
    const b = generator('b0000000').next();
    expect(a < b).toBe(true);
    expect(derivedBrandedId(a, 46_655) < derivedBrandedId(b, 0)).toBe(true);
    expect(derivedBrandedId(a, 0)).not.toBe(derivedBrandedId(b, 0));
  });

  it("outputs of an entry's outputs (the next stage of a pipeline) stay distinct and in order", () => {
    const entry = brandedId();
    const firstStage = [0, 1, 2].map((position) => derivedBrandedId(entry, position));
    const secondStage = firstStage.flatMap((source) =>
      [0, 1].map((position) => derivedBrandedId(source, position)),
    );
    expectStrictlyIncreasing(secondStage);
    const single = firstStage.map((source) => derivedBrandedId(source, 0));
    expectStrictlyIncreasing(single);
  });

  describe('a source without a branded id: its stream entry id', () => {
    it('takes time and sequence from the entry id and stays a valid branded id', () => {
      const id = derivedBrandedId('1700000000000-5', 2);
      expect(isBrandedId(id)).toBe(true);
      expect(brandedIdTime(id).getTime()).toBe(T0);
      expect(id.slice(10, 16)).toBe('000005');
      expect(id.slice(21)).toBe('002');
      expect(derivedBrandedId('1700000000000', 0).slice(10, 16)).toBe('000000');
    });

    it('keeps the order of the entries of a stream', () => {
      const sources = ['1700000000000-0', '1700000000000-1', '1700000000000-36', '1700000000001-0'];
      expectStrictlyIncreasing(
        sources.flatMap((source) => [0, 9].map((position) => derivedBrandedId(source, position))),
      );
    });

    it('throws RangeError when the milliseconds or the sequence do not fit', () => {
      expect(() => derivedBrandedId('3656158440062976-0', 0)).toThrow(RangeError);
      expect(() => derivedBrandedId('1700000000000-2176782336', 0)).toThrow(RangeError);
      expect(() => derivedBrandedId('1700000000000-2176782335', 0)).not.toThrow();
      expect(() => derivedBrandedId('18446744073709551615-18446744073709551615', 0)).toThrow(
        /does not fit a branded id/,
      );
    });

    it('throws TypeError for a source that is neither a branded id nor an entry id', () => {
      expect(() => derivedBrandedId('order-42', 0)).toThrow(TypeError);
      expect(() => derivedBrandedId('order-42', 0)).toThrow(
        /neither a branded id nor a stream entry id/,
      );
      expect(() => derivedBrandedId('ABCDEFGHIJKLMNOPQRSTUVWX', 0)).toThrow(TypeError);
    });
  });

  it('refuses a bad source or position', () => {
    const source = brandedId();
    expect(() => derivedBrandedId('', 0)).toThrow(TypeError);
    expect(() => derivedBrandedId(undefined as unknown as string, 0)).toThrow(
      /source must be a non-empty string, got undefined/,
    );
    expect(() => derivedBrandedId(source, 1.5)).toThrow(TypeError);
    expect(() => derivedBrandedId(source, 1.5)).toThrow(/position must be an integer, got 1.5/);
    expect(() => derivedBrandedId(source, Number.NaN)).toThrow(TypeError);
    expect(() => derivedBrandedId(source, '1' as unknown as number)).toThrow(TypeError);
    expect(() => derivedBrandedId(source, -1)).toThrow(RangeError);
    expect(() => derivedBrandedId(source, 46_656)).toThrow(
      /position must be 0 to 46655, got 46656/,
    );
  });
});
