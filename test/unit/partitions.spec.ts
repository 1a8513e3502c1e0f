/**
 * The pure parts of partitioned streams (docs/partitions.md): the documented hash (zlib's CRC-32,
 * checked against values Python's `zlib.crc32` prints), the contiguous floor/ceil assignment every
 * process computes alike, and the in-place retry of a key's lane.
 */
import { decodeEntry, fieldsCodec } from '../../lib/codec/codecs';
import { crc32, partitionOf, partitionStreamOf } from '../../lib/codec/partition-key';
import { KeyRetry } from '../../lib/consumer/retry/key-retry';
import { assignedPartitions } from '../../lib/consumer/partitions/partition-assignment';
import { NonRetryableError } from '../../lib/errors/non-retryable.error';
import type { StreamMessage } from '../../lib/interfaces/stream-message.interface';
import { testLoop } from '../support/loop-context';

describe('partition hash', () => {
  it('is zlib CRC-32 of the UTF-8 bytes (Python: zlib.crc32(key.encode()))', () => {
    // python3 -c "import zlib; print([zlib.crc32(k.encode()) for k in ['', 'a', 'acct-42', 'héllo']])"
    expect(['', 'a', 'acct-42', 'héllo'].map(crc32)).toEqual([
      0, 3904355907, 1198172233, 2654700086,
    ]);
    expect(partitionOf('acct-42', 16)).toBe(1198172233 % 16);
    expect(partitionStreamOf('orders', 3)).toBe('orders:p:3');
  });
});

describe('the partition key field', () => {
  const flat = ['id', 'o-1', 'pkey', 'acct-7', 'sku', 'x'];
  it("is the module's on a partition stream: the codec does not see it", () => {
    expect(decodeEntry(fieldsCodec, flat, true).payload).toEqual({ sku: 'x' });
  });
  it("is the producer's own field on any other stream: the codec gets it", () => {
    expect(decodeEntry(fieldsCodec, flat).payload).toEqual({ pkey: 'acct-7', sku: 'x' });
  });
});

describe('assignedPartitions', () => {
  it('gives each of N members floor(P/N) or ceil(P/N) contiguous partitions, covering all once', () => {
    for (const count of [1, 2, 7, 16, 64])
      for (let n = 1; n <= 9; n++) {
        const members = Array.from({ length: n }, (_, i) => `m${(i * 7) % n}-${i}`);
        const all = members.flatMap((m) => assignedPartitions(members, m, count));
        expect(all.sort((a, b) => a - b)).toEqual(Array.from({ length: count }, (_, i) => i));
        for (const m of members) {
          const size = assignedPartitions(members, m, count).length;
          expect(size).toBeGreaterThanOrEqual(Math.floor(count / n));
          expect(size).toBeLessThanOrEqual(Math.ceil(count / n));
        }
      }
  });

  it('depends on the member set only, not on the order it was listed in', () => {
    expect(assignedPartitions(['b', 'a', 'c'], 'a', 6)).toEqual([0, 1]);
    expect(assignedPartitions(['c', 'b', 'a'], 'b', 6)).toEqual([2, 3]);
    expect(assignedPartitions(['a', 'b'], 'z', 6)).toEqual([]);
  });
});

describe('KeyRetry', () => {
  const message = (attempts: number): StreamMessage<unknown> =>
    ({ id: 'x', entryId: '1-0', attempts }) as unknown as StreamMessage<unknown>;

  it('gives the policy delay of the next attempt', () => {
    const { context } = testLoop({ retry: { type: 'fixed', delayMs: 50 }, maxDeliveries: 3 });
    expect(new KeyRetry(context).delayOf(message(1), new Error('boom'))).toBe(50);
  });

  it('gives up on the last allowed delivery, a NonRetryableError and retry: false', () => {
    const { context } = testLoop({ retry: { type: 'fixed', delayMs: 1 }, maxDeliveries: 3 });
    expect(new KeyRetry(context).delayOf(message(3), new Error('boom'))).toBeNull();
    expect(new KeyRetry(context).delayOf(message(1), new NonRetryableError('no'))).toBeNull();
    const off = testLoop({ retry: false });
    expect(new KeyRetry(off.context).delayOf(message(1), new Error('boom'))).toBeNull();
  });
});
