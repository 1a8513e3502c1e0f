/**
 * Stream entry ids (lib/codec/entry-id.ts): compareEntryIds orders them as the server does, by ms
 * then seq, whatever their lengths, checked against BigInt arithmetic.
 */
import { compareEntryIds } from '../../lib/codec/entry-id';

/** The server's order, from BigInt parts. */
function byValue(a: string, b: string): number {
  const parts = (id: string) => {
    const [ms, seq = '0'] = id.split('-');
    return [BigInt(ms), BigInt(seq)] as const;
  };
  const [aMs, aSeq] = parts(a);
  const [bMs, bSeq] = parts(b);
  if (aMs !== bMs) return aMs < bMs ? -1 : 1;
  return aSeq === bSeq ? 0 : aSeq < bSeq ? -1 : 1;
}

it('orders by ms, then seq, as numbers and not as text', () => {
  expect(compareEntryIds('9-0', '10-0')).toBe(-1);
  expect(compareEntryIds('10-0', '9-0')).toBe(1);
  expect(compareEntryIds('1700000000000-9', '1700000000000-10')).toBe(-1);
  expect(compareEntryIds('1700000000001-0', '1700000000000-99')).toBe(1);
  expect(compareEntryIds('1700000000000-5', '1700000000000-5')).toBe(0);
});

it('reads an ms-only id as seq 0, and leading zeros as the value they write', () => {
  expect(compareEntryIds('5', '5-0')).toBe(0);
  expect(compareEntryIds('5', '5-1')).toBe(-1);
  expect(compareEntryIds('005-01', '5-1')).toBe(0);
  expect(compareEntryIds('0-0', '0')).toBe(0);
});

it('orders ids whose parts have equal lengths as their texts, leading zeros included', () => {
  expect(compareEntryIds('1700000000000-10', '1700000000001-09')).toBe(-1);
  expect(compareEntryIds('005-10', '004-99')).toBe(1);
  expect(compareEntryIds('0042', '0042')).toBe(0);
  expect(compareEntryIds('9-10', '10-1')).toBe(-1);
});

it('is exact beyond 2^53 (a seq near 2^64)', () => {
  expect(compareEntryIds('5-18446744073709551614', '5-18446744073709551615')).toBe(-1);
  expect(compareEntryIds('18446744073709551615-0', '18446744073709551614-9')).toBe(1);
});

it('agrees with BigInt arithmetic on many ids', () => {
  const ids: string[] = [];
  for (let i = 0; i < 400; i++) {
    const ms = String(Math.floor(Math.random() * 10 ** (1 + (i % 14))));
    ids.push(i % 5 === 0 ? ms : `${ms}-${Math.floor(Math.random() * 10 ** (i % 6))}`);
  }
  for (let i = 0; i + 1 < ids.length; i++)
    expect([ids[i], ids[i + 1], compareEntryIds(ids[i], ids[i + 1])]).toEqual([
      ids[i],
      ids[i + 1],
      byValue(ids[i], ids[i + 1]),
    ]);
});
