/**
 * Exactly-once commits (lib/redis/loop/entry-commits.ts) on a real redis-server: an entry's writes
 * and its XACK happen together or not at all. A commit is fenced by the entry's owner and delivery
 * count (a peer's claim, a read of it again, an ack already done: nothing written, nothing acked),
 * checked before its first write (a write that could not run leaves every write of its entry
 * undone and the entry pending), refused whole at maxmemory, and the entries of one call commit in
 * order, each on its own verdict.
 */
import type { Redis } from 'ioredis';
import type { CommandLink } from '../../lib/redis/connection/command-link';
import { RedisEntryCommits, type CommitWrite, type EntryCommit } from '../../lib/redis/loop';
import { ackedIdKey, checkpointKeyOf, newestIdKey } from '../../lib/redis/package-keys';
import { openCommandLink } from '../support/command-links';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';

const STREAM = '{src}:orders';
const GROUP = 'billing';

let server: RedisServer;
let admin: Redis;
let link: CommandLink;
let commits: RedisEntryCommits;

beforeAll(async () => {
  server = await RedisServer.start();
  admin = server.client();
  link = await openCommandLink({ connection: server.url, cluster: undefined });
  commits = new RedisEntryCommits(link);
});
afterAll(async () => {
  await link.close();
  await stopAllRedisServers();
});
beforeEach(async () => {
  await admin.flushall();
  await admin.xgroup('CREATE', STREAM, GROUP, '$', 'MKSTREAM');
});

/** Publishes `n` entries and reads them as `consumer`: their ids, pending with 1 delivery each. */
async function delivered(n: number, consumer = 'c1'): Promise<string[]> {
  for (let i = 0; i < n; i++) await admin.xadd(STREAM, '*', 'n', String(i));
  const reply = (await admin.xreadgroup(
    'GROUP',
    GROUP,
    consumer,
    'COUNT',
    n,
    'STREAMS',
    STREAM,
    '>',
  )) as Array<[string, Array<[string, string[]]>]>;
  return reply[0][1].map(([id]) => id);
}

/** The pending entries of the group: id, owner, deliveries. */
async function pending(): Promise<Array<[string, string, number]>> {
  const rows = (await admin.xpending(STREAM, GROUP, '-', '+', 100)) as Array<
    [string, string, number, number]
  >;
  return rows.map(([id, owner, , deliveries]) => [id, owner, Number(deliveries)]);
}

const WRITES: CommitWrite[] = [
  { op: 'xadd', key: '{src}:ledger', fields: ['account', 'a-1', 'amount', '250'] },
  { op: 'incrBy', key: '{src}:balance:a-1', by: 250 },
  { op: 'incrBy', key: '{src}:balance:a-1', by: -50 },
  { op: 'hset', key: '{src}:last', field: 'a-1', value: 'e1' },
  { op: 'set', key: '{src}:seen:e1', value: '1', pxMs: 60_000 },
  { op: 'set', key: '{src}:scratch', value: 'x' },
  { op: 'del', key: '{src}:scratch' },
];

describe('RedisEntryCommits', () => {
  it("writes an entry's outputs and acks it in one step", async () => {
    const [id] = await delivered(1);
    const verdicts = await commits.commit(STREAM, GROUP, 'c1', [
      { entryId: id, deliveries: 1, writes: WRITES },
    ]);
    expect(verdicts).toEqual([{ entryId: id, outcome: 'committed' }]);
    const ledger = await admin.xrange('{src}:ledger', '-', '+');
    expect(ledger.map(([, fields]) => fields)).toEqual([['account', 'a-1', 'amount', '250']]);
    expect(await admin.get('{src}:balance:a-1')).toBe('200');
    expect(await admin.hget('{src}:last', 'a-1')).toBe('e1');
    const ttl = await admin.pttl('{src}:seen:e1');
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
    expect(await admin.exists('{src}:scratch')).toBe(0);
    expect(await pending()).toEqual([]);
  });

  it("is fenced once a peer claimed the entry: nothing written, the peer's to commit", async () => {
    const [id] = await delivered(1);
    await admin.xclaim(STREAM, GROUP, 'c2', 0, id);
    const [verdict] = await commits.commit(STREAM, GROUP, 'c1', [
      { entryId: id, deliveries: 1, writes: WRITES },
    ]);
    expect(verdict).toEqual({ entryId: id, outcome: 'fenced', why: 'owned by c2' });
    expect(await admin.exists('{src}:ledger', '{src}:balance:a-1', '{src}:last')).toBe(0);
    expect(await pending()).toEqual([[id, 'c2', 2]]);
    // the new owner, with the delivery it saw, commits it
    const [theirs] = await commits.commit(STREAM, GROUP, 'c2', [
      { entryId: id, deliveries: 2, writes: WRITES },
    ]);
    expect(theirs.outcome).toBe('committed');
    expect(await admin.xlen('{src}:ledger')).toBe(1);
    expect(await pending()).toEqual([]);
  });

  it('is fenced when the entry was delivered again since, or is no longer pending', async () => {
    const [id] = await delivered(1);
    // the same consumer reads its own pending entries again: a second delivery
    await admin.xreadgroup('GROUP', GROUP, 'c1', 'STREAMS', STREAM, '0');
    const [stale] = await commits.commit(STREAM, GROUP, 'c1', [
      { entryId: id, deliveries: 1, writes: WRITES },
    ]);
    expect(stale).toEqual({ entryId: id, outcome: 'fenced', why: 'delivered 2 times' });
    expect(await admin.xlen('{src}:ledger')).toBe(0);
    const [current] = await commits.commit(STREAM, GROUP, 'c1', [
      { entryId: id, deliveries: 2, writes: WRITES },
    ]);
    expect(current.outcome).toBe('committed');
    // committed once: the same commit again finds nothing pending and writes nothing
    const [again] = await commits.commit(STREAM, GROUP, 'c1', [
      { entryId: id, deliveries: 2, writes: WRITES },
    ]);
    expect(again).toEqual({ entryId: id, outcome: 'fenced', why: 'not pending' });
    expect(await admin.xlen('{src}:ledger')).toBe(1);
    expect(await admin.get('{src}:balance:a-1')).toBe('200');
  });

  it('fences each entry of one call on its own, among many of its consumer in hand', async () => {
    const ids = await delivered(10);
    await admin.xclaim(STREAM, GROUP, 'c2', 0, ids[2]); // a peer's now
    await admin.xclaim(STREAM, GROUP, 'c1', 0, ids[4]); // delivered again: 2
    await admin.xack(STREAM, GROUP, ids[6]); // no longer pending
    const out = (i: number): EntryCommit => ({
      entryId: ids[i],
      deliveries: 1,
      writes: [{ op: 'xadd', key: '{src}:out', fields: ['n', String(i)] }],
    });
    // not in stream order: the call's range is its lowest to its highest id
    const verdicts = await commits.commit(STREAM, GROUP, 'c1', [9, 1, 2, 4, 6, 8].map(out));
    expect(verdicts).toEqual([
      { entryId: ids[9], outcome: 'committed' },
      { entryId: ids[1], outcome: 'committed' },
      { entryId: ids[2], outcome: 'fenced', why: 'owned by c2' },
      { entryId: ids[4], outcome: 'fenced', why: 'delivered 2 times' },
      { entryId: ids[6], outcome: 'fenced', why: 'not pending' },
      { entryId: ids[8], outcome: 'committed' },
    ]);
    // two entries with three more of the consumer's between them: the range returns four rows
    // (twice the entries), the last entry is past them, asked alone and committed all the same
    const last = await commits.commit(STREAM, GROUP, 'c1', [0, 7].map(out));
    expect(last.map((v) => v.outcome)).toEqual(['committed', 'committed']);
    const written = await admin.xrange('{src}:out', '-', '+');
    expect(written.map(([, fields]) => fields[1])).toEqual(['9', '1', '8', '0', '7']);
    expect((await pending()).map(([id]) => id)).toEqual([ids[2], ids[3], ids[4], ids[5]]);
  });

  it('writes none of an entry whose write could not run, and leaves it pending', async () => {
    const [hash, list, text] = await delivered(3);
    await admin.rpush('{src}:a-list', 'x');
    await admin.set('{src}:label', 'not a number');
    const first: CommitWrite[] = [
      { op: 'xadd', key: '{src}:ledger', fields: ['n', '1'] },
      { op: 'incrBy', key: '{src}:count', by: 1 },
    ];
    const verdicts = await commits.commit(STREAM, GROUP, 'c1', [
      // the hash is written earlier in the same entry: INCRBY on it would fail half-way
      {
        entryId: hash,
        deliveries: 1,
        writes: [
          ...first,
          { op: 'hset', key: '{src}:h', field: 'f', value: 'v' },
          { op: 'incrBy', key: '{src}:h', by: 1 },
        ],
      },
      {
        entryId: list,
        deliveries: 1,
        writes: [...first, { op: 'xadd', key: '{src}:a-list', fields: ['n', '1'] }],
      },
      {
        entryId: text,
        deliveries: 1,
        writes: [...first, { op: 'incrBy', key: '{src}:label', by: 1 }],
      },
    ]);
    expect(verdicts.map((v) => v.outcome)).toEqual(['invalid', 'invalid', 'invalid']);
    expect(verdicts.map((v) => ('why' in v ? v.why : ''))).toEqual([
      'INCRBY on {src}:h, which holds a hash',
      'XADD on {src}:a-list, which holds a list',
      'INCRBY on {src}:label, whose value is not an integer of at most 15 digits',
    ]);
    expect(await admin.exists('{src}:ledger', '{src}:count', '{src}:h')).toBe(0);
    expect((await pending()).map(([id]) => id)).toEqual([hash, list, text]);
  });

  it("writes an entry's dedup and newest-id records with it; a newest-id record never goes back", async () => {
    const [first, second] = await delivered(2);
    const newer = 'kz00000000000000newer000';
    const older = 'kz00000000000000older000'.replace('older', 'aaaaa');
    const verdicts = await commits.commit(STREAM, GROUP, 'c1', [
      {
        entryId: first,
        deliveries: 1,
        writes: [],
        records: [
          { kind: 'acked', id: newer, ttlMs: 60_000 },
          { kind: 'newest', key: 'a-1', id: newer, ttlMs: 60_000 },
        ],
      },
      // an older id of the same key after it: the compare-and-set keeps the newer
      {
        entryId: second,
        deliveries: 1,
        writes: [],
        records: [{ kind: 'newest', key: 'a-1', id: older, ttlMs: 60_000 }],
      },
    ]);
    expect(verdicts.map((v) => v.outcome)).toEqual(['committed', 'committed']);
    // the keys the skip filter reads (package-keys.ts)
    expect(await admin.get(ackedIdKey(STREAM, GROUP, newer))).toBe(newer);
    expect(await admin.pttl(ackedIdKey(STREAM, GROUP, newer))).toBeGreaterThan(50_000);
    expect(await admin.get(newestIdKey(STREAM, GROUP, 'a-1'))).toBe(newer);
    expect(await pending()).toEqual([]);
  });

  it('commits a branded id once: a copy whose dedup record is there writes nothing and is acked', async () => {
    const [a, b, c] = await delivered(3);
    const id = 'kz00000000000000copy0000';
    const copy = (entryId: string) => ({
      entryId,
      deliveries: 1,
      writes: [{ op: 'incrBy' as const, key: '{src}:n', by: 1 }],
      records: [{ kind: 'acked' as const, id, ttlMs: 60_000 }],
    });
    // two copies in one call: the second sees the first's record
    expect(await commits.commit(STREAM, GROUP, 'c1', [copy(a), copy(b)])).toEqual([
      { entryId: a, outcome: 'committed' },
      { entryId: b, outcome: 'duplicate' },
    ]);
    // a copy another consumer handled, committed after: its look-up could not see the record
    expect(await commits.commit(STREAM, GROUP, 'c1', [copy(c)])).toEqual([
      { entryId: c, outcome: 'duplicate' },
    ]);
    expect(await admin.get('{src}:n')).toBe('1');
    expect(await pending()).toEqual([]);
  });

  it("drops the committed entries' checkpoints right behind the commit, as an XACK does", async () => {
    const [id] = await delivered(1);
    await admin.hset(checkpointKeyOf(STREAM, GROUP), id, '{"step":2}');
    const verdicts = await commits.commit(
      STREAM,
      GROUP,
      'c1',
      [{ entryId: id, deliveries: 1, writes: [] }],
      [{ kind: 'dropCheckpoints', entryIds: [id] }],
    );
    expect(verdicts).toEqual([{ entryId: id, outcome: 'committed' }]);
    expect(await admin.hget(checkpointKeyOf(STREAM, GROUP), id)).toBeNull();
  });

  it('commits the entries of one call in order, each on its own verdict', async () => {
    const [a, b, c, d] = await delivered(4);
    await admin.xclaim(STREAM, GROUP, 'c2', 0, c);
    const verdicts = await commits.commit(STREAM, GROUP, 'c1', [
      { entryId: a, deliveries: 1, writes: [{ op: 'set', key: '{src}:n', value: '5' }] },
      { entryId: b, deliveries: 1, writes: [{ op: 'incrBy', key: '{src}:n', by: 3 }] },
      { entryId: c, deliveries: 1, writes: [{ op: 'incrBy', key: '{src}:n', by: 100 }] },
      // sees b's write: 8 + 999999999999993 passes 15 digits
      {
        entryId: d,
        deliveries: 1,
        writes: [{ op: 'incrBy', key: '{src}:n', by: 999_999_999_999_993 }],
      },
    ]);
    expect(verdicts.map((v) => v.outcome)).toEqual(['committed', 'committed', 'fenced', 'invalid']);
    expect(await admin.get('{src}:n')).toBe('8');
    expect(await pending()).toEqual([
      [c, 'c2', 2],
      [d, 'c1', 1],
    ]);
  });

  it("carries a committed entry's key types to the next, never a refused entry's", async () => {
    const [a, b, c] = await delivered(3);
    const verdicts = await commits.commit(STREAM, GROUP, 'c1', [
      { entryId: a, deliveries: 1, writes: [{ op: 'set', key: '{src}:n', value: '5' }] },
      // '{src}:h' would be a hash after b, but b is refused (an HSET on a's string)
      {
        entryId: b,
        deliveries: 1,
        writes: [
          { op: 'hset', key: '{src}:h', field: 'f', value: 'v' },
          { op: 'hset', key: '{src}:n', field: 'f', value: 'v' },
        ],
      },
      { entryId: c, deliveries: 1, writes: [{ op: 'incrBy', key: '{src}:h', by: 2 }] },
    ]);
    expect(verdicts.map((v) => v.outcome)).toEqual(['committed', 'invalid', 'committed']);
    expect(verdicts[1]).toEqual({
      entryId: b,
      outcome: 'invalid',
      why: 'HSET on {src}:n, which holds a string',
    });
    expect(await admin.get('{src}:h')).toBe('2');
    expect(await pending()).toEqual([[b, 'c1', 1]]);
  });

  it('sends the script itself when the server lost it (a restart, a failover)', async () => {
    const [id] = await delivered(1);
    await admin.script('FLUSH');
    const [verdict] = await commits.commit(STREAM, GROUP, 'c1', [
      { entryId: id, deliveries: 1, writes: WRITES },
    ]);
    expect(verdict.outcome).toBe('committed');
    expect(await admin.get('{src}:balance:a-1')).toBe('200');
    expect(await pending()).toEqual([]);
  });

  it('is refused whole at maxmemory: nothing written, nothing acked', async () => {
    const [id] = await delivered(1);
    // DEL is allowed at maxmemory, the writes after it are not: refused only from there on, the
    // commit would delete and leave the entry pending
    await admin.set('{src}:keep', 'v');
    const writes: CommitWrite[] = [{ op: 'del', key: '{src}:keep' }, ...WRITES];
    await admin.config('SET', 'maxmemory-policy', 'noeviction');
    await admin.config('SET', 'maxmemory', '1');
    try {
      await expect(
        commits.commit(STREAM, GROUP, 'c1', [{ entryId: id, deliveries: 1, writes }]),
      ).rejects.toThrow(/OOM/);
    } finally {
      await admin.config('SET', 'maxmemory', '0');
    }
    expect(await admin.get('{src}:keep')).toBe('v');
    expect(await admin.exists('{src}:ledger', '{src}:balance:a-1', '{src}:last')).toBe(0);
    expect(await pending()).toEqual([[id, 'c1', 1]]);
  });

  it('refuses a malformed write before sending anything', async () => {
    const [id] = await delivered(1);
    const commit = (write: CommitWrite) =>
      commits.commit(STREAM, GROUP, 'c1', [{ entryId: id, deliveries: 1, writes: [write] }]);
    await expect(commit({ op: 'xadd', key: '{src}:out', fields: ['odd'] })).rejects.toThrow(
      TypeError,
    );
    await expect(commit({ op: 'incrBy', key: '{src}:n', by: 1.5 })).rejects.toThrow(
      /integer of at most 15 digits/,
    );
    await expect(commit({ op: 'set', key: '{src}:n', value: '1', pxMs: 0 })).rejects.toThrow(
      /pxMs/,
    );
    expect(await pending()).toEqual([[id, 'c1', 1]]);
    expect(await admin.exists('{src}:out', '{src}:n')).toBe(0);
  });
});
