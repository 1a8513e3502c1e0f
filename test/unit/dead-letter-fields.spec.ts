/**
 * The dead-letter wire format in one place (lib/codec/dead-letter-fields.ts) and which letters a
 * stream name asks for (lib/codec/dead-letter-scope.ts): what the path writes reads back the
 * same; a partitioned stream's letters are found by its own name, those written with a
 * partition's name (before partitioned streams had one dead-letter stream) included; a partition's
 * name finds that partition's; a redrive goes to the partition of the letter's key under the
 * stored count, never to a stream nobody reads.
 */
import {
  deadLetterFields,
  deadLetterStreamOf,
  parseDeadLetter,
} from '../../lib/codec/dead-letter-fields';
import {
  deadLetterScope,
  letterSource,
  redriveTarget,
  type DeadLetterScope,
} from '../../lib/codec/dead-letter-scope';
import { crc32 } from '../../lib/codec/partition-key';
import { readDeadLetterScope } from '../../lib/admin/dead-letter-operations';
import type { StreamsClient } from '../../lib/redis/stream-roles';

const AT = new Date('2026-01-02T03:04:05.006Z');

/** A letter as the path writes it, optionally with a partition and key. */
function written(stream: string, extra: { partition?: number; key?: string } = {}): string[] {
  const original = ['id', 'evt-1', 'data', '{"a":1}', ...(extra.key ? ['pkey', extra.key] : [])];
  return [
    ...original,
    ...deadLetterFields({
      reason: 'max_deliveries',
      stream,
      group: 'billing',
      entryId: '5-0',
      attempts: 3,
      error: 'boom',
      at: AT,
      ...extra,
    }),
  ];
}

/** A letter written before partitioned streams had one dead-letter stream (no partition, no key). */
function legacy(partitionStream: string, key: string): string[] {
  return [
    ...['id', 'evt-2', 'data', '{}', 'pkey', key],
    ...['dlq_reason', 'max_deliveries', 'dlq_stream', partitionStream, 'dlq_group', 'billing'],
    ...['dlq_entry_id', '7-0', 'dlq_attempts', '5', 'dlq_error', '', 'dlq_at', AT.toISOString()],
  ];
}

const counts: Record<string, number> = { orders: 8 };
const storedCount = async (stream: string) => counts[stream] ?? null;

describe('the dead-letter fields', () => {
  it('name the dead-letter stream after the stream, and read back what the path wrote', () => {
    expect(deadLetterStreamOf('orders')).toBe('orders:dlq');
    const plain = parseDeadLetter(written('payments'));
    expect(plain).toEqual({
      reason: 'max_deliveries',
      stream: 'payments',
      group: 'billing',
      sourceEntryId: '5-0',
      attempts: 3,
      error: 'boom',
      atMs: AT.getTime(),
      partition: undefined,
      key: undefined,
      original: ['id', 'evt-1', 'data', '{"a":1}'],
    });
    const keyed = written('orders', { partition: 3, key: 'acct-7' });
    expect(keyed.slice(-4)).toEqual(['dlq_partition', '3', 'dlq_key', 'acct-7']);
    expect(parseDeadLetter(keyed)).toMatchObject({
      stream: 'orders',
      partition: 3,
      key: 'acct-7',
      original: ['id', 'evt-1', 'data', '{"a":1}', 'pkey', 'acct-7'],
    });
  });

  it('read a letter missing fields (hand-written, or older) without inventing values', () => {
    const bare = parseDeadLetter(['id', 'x', 'dlq_attempts', 'many', 'dlq_partition', '03']);
    expect(bare).toMatchObject({
      reason: '',
      stream: undefined,
      group: undefined,
      attempts: 0,
      error: undefined,
      atMs: undefined,
      partition: undefined,
      original: ['id', 'x'],
    });
  });
});

describe('the scope of a stream name', () => {
  it('is partitioned for a stored count, one partition for <s>:p:<i> within it, else plain', async () => {
    expect(await deadLetterScope('orders', storedCount)).toEqual({
      asked: 'orders',
      stream: 'orders',
      partitions: 8,
    });
    expect(await deadLetterScope('orders:p:3', storedCount)).toEqual({
      asked: 'orders:p:3',
      stream: 'orders',
      partitions: 8,
      partition: 3,
    });
    for (const name of ['payments', 'orders:p:8', 'orders:p:03', 'payments:p:1'])
      expect(await deadLetterScope(name, storedCount)).toEqual({
        asked: name,
        stream: name,
        partitions: null,
      });
    expect(await deadLetterScope('orders', undefined)).toMatchObject({ partitions: null });
  });

  it("finds a partitioned stream's letters by its name, legacy ones included, and a partition's by its name", async () => {
    const whole = await deadLetterScope('orders', storedCount);
    const three = await deadLetterScope('orders:p:3', storedCount);
    const plain = await deadLetterScope('payments', storedCount);
    const letters = {
      current: parseDeadLetter(written('orders', { partition: 3, key: 'acct-7' })),
      legacy: parseDeadLetter(legacy('orders:p:1', 'acct-1')),
      other: parseDeadLetter(written('orders-eu', { partition: 3, key: 'x' })),
      otherLegacy: parseDeadLetter(legacy('orders-eu:p:3', 'x')),
      payments: parseDeadLetter(written('payments')),
    };
    const sources = (scope: DeadLetterScope) =>
      Object.fromEntries(
        Object.entries(letters).map(([name, l]) => [name, letterSource(scope, l)]),
      );
    expect(sources(whole)).toEqual({
      current: { stream: 'orders', partition: 3 },
      legacy: { stream: 'orders', partition: 1 },
      other: undefined,
      otherLegacy: undefined,
      payments: undefined,
    });
    expect(sources(three)).toEqual({
      current: { stream: 'orders', partition: 3 },
      legacy: undefined,
      other: undefined,
      otherLegacy: undefined,
      payments: undefined,
    });
    expect(sources(plain)).toMatchObject({ current: undefined, payments: { stream: 'payments' } });
  });
});

describe('reading the scope', () => {
  it('takes a name as a plain stream when the ACL refuses the count; any other failure rejects', async () => {
    const refusing = (err: Error) =>
      ({ partitions: { storedCount: () => Promise.reject(err) } }) as unknown as StreamsClient;
    const noPerm = new Error(
      'NOPERM this user has no permissions to access one of the keys used as arguments',
    );
    expect(await readDeadLetterScope(refusing(noPerm), 'orders')).toEqual({
      asked: 'orders',
      stream: 'orders',
      partitions: null,
    });
    await expect(
      readDeadLetterScope(refusing(new Error('Connection is closed.')), 'orders'),
    ).rejects.toThrow('Connection is closed.');
  });
});

describe('where a redrive sends a letter', () => {
  it("to its key's partition under the stored count, pkey kept (or restored from dlq_key)", async () => {
    const scope = await deadLetterScope('orders', storedCount);
    const current = parseDeadLetter(written('orders', { partition: 3, key: 'acct-7' }));
    expect(redriveTarget(scope, current, letterSource(scope, current)!)).toEqual({
      stream: `orders:p:${crc32('acct-7') % 8}`,
      fields: ['id', 'evt-1', 'data', '{"a":1}', 'pkey', 'acct-7'],
    });
    const legacyLetter = parseDeadLetter(legacy('orders:p:1', 'acct-1'));
    expect(redriveTarget(scope, legacyLetter, letterSource(scope, legacyLetter)!)).toMatchObject({
      stream: `orders:p:${crc32('acct-1') % 8}`,
    });
    // the original fields lost their pkey (written by hand): dlq_key puts it back
    const stripped = { ...current, original: ['id', 'evt-1', 'data', '{"a":1}'] };
    expect(redriveTarget(scope, stripped, { stream: 'orders', partition: 3 })).toEqual({
      stream: `orders:p:${crc32('acct-7') % 8}`,
      fields: ['id', 'evt-1', 'data', '{"a":1}', 'pkey', 'acct-7'],
    });
  });

  it('without a key to the partition it came from; with neither, or no fields, nowhere', async () => {
    const scope = await deadLetterScope('orders', storedCount);
    const unkeyed = parseDeadLetter(written('orders', { partition: 5 }));
    expect(redriveTarget(scope, unkeyed, { stream: 'orders', partition: 5 })).toMatchObject({
      stream: 'orders:p:5',
    });
    expect(redriveTarget(scope, unkeyed, { stream: 'orders', partition: undefined })).toBe(
      undefined,
    );
    expect(redriveTarget(scope, unkeyed, { stream: 'orders', partition: 9 })).toBe(undefined);
    const empty = { ...unkeyed, original: [] };
    expect(redriveTarget(scope, empty, { stream: 'orders', partition: 5 })).toBe(undefined);
    const plain = await deadLetterScope('payments', storedCount);
    const letter = parseDeadLetter(written('payments'));
    expect(redriveTarget(plain, letter, letterSource(plain, letter)!)).toEqual({
      stream: 'payments',
      fields: ['id', 'evt-1', 'data', '{"a":1}'],
    });
  });
});
