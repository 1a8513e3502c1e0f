/**
 * The skip records' script on a real server (lib/redis/loop/skip-records.script.ts, docs/delivery.md
 * "Duplicates and stale replays"): the XACK, the records written with it (`dedup` values are the
 * branded ids their keys name, `newerWins` a compare-and-set), and the look-up (one MGET) reading
 * them back; under RESP2 and both RESP3 mappings, for stream and group names of more than one
 * byte per character, past the 1,000-argument chunks, after a SCRIPT FLUSH (EVAL on NOSCRIPT).
 */
import type { Redis, RedisOptions } from 'ioredis';
import { ackedIdKey, keyInSlotOf, newestIdKey } from '../../lib/redis/package-keys';
import { RedisStreamsClient } from '../../lib/redis/streams-client';
import type { SkipRecord } from '../../lib/redis/stream-roles';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';

let server: RedisServer;
let admin: Redis;
let n = 0;

beforeAll(async () => {
  server = await RedisServer.start();
  admin = server.client();
});
afterAll(async () => {
  await stopAllRedisServers();
});

const MODES: Array<{ name: string; options: RedisOptions }> = [
  { name: 'RESP2', options: { protocol: 2 } },
  { name: 'RESP3 (ioredis 6 default, legacy mapping)', options: {} },
  { name: "RESP3 with replyMapping 'resp3'", options: { protocol: 3, replyMapping: 'resp3' } },
];

/** Branded-shaped ids, increasing with `i`. */
const bid = (i: number) => `${String(i).padStart(10, '0')}000000node0001`;

describe.each(MODES)('the ack script under $name', ({ options }) => {
  let loop: Redis;
  let control: Redis;
  let client: RedisStreamsClient;

  beforeAll(() => {
    loop = server.client({ maxRetriesPerRequest: 0, ...options });
    control = server.client(options);
    client = new RedisStreamsClient(loop, control, 5000);
  });
  afterAll(() => {
    loop.disconnect();
    control.disconnect();
  });

  /** A stream (of `name`) with `count` entries pending for consumer `c` of group `group`. */
  async function pendingEntries(
    name: string,
    group: string,
    count: number,
  ): Promise<{ stream: string; ids: string[] }> {
    const stream = `${name}-${process.pid}-${++n}`;
    await admin.xgroup('CREATE', stream, group, '0', 'MKSTREAM');
    const pipeline = admin.pipeline();
    for (let i = 0; i < count; i++) pipeline.xadd(stream, '*', 'data', String(i));
    await pipeline.exec();
    const ids: string[] = [];
    for (;;) {
      const read = (await admin.xreadgroup(
        'GROUP',
        group,
        'c',
        'COUNT',
        1000,
        'STREAMS',
        stream,
        '>',
      )) as Array<[string, Array<[string, string[]]>]> | null;
      if (!read) break;
      for (const [id] of read[0][1]) ids.push(id);
    }
    return { stream, ids };
  }

  it('acks and writes the records in one call; the look-up reads them back', async () => {
    for (const [name, group] of [
      ['orders', 'billing'],
      ['zähler-流水', 'gé-组'], // more bytes than characters: the dedup value is cut by bytes
      ['{eu}:orders', 'g'], // a hash-tagged stream
    ]) {
      const { stream, ids } = await pendingEntries(name, group, 3);
      await admin.set(newestIdKey(stream, group, 'k1'), bid(5));
      const records: SkipRecord[] = [
        { kind: 'acked', id: bid(1), ttlMs: 600_000 },
        { kind: 'acked', id: bid(2), ttlMs: 600_000 },
        { kind: 'newest', key: 'k1', id: bid(3), ttlMs: 86_400_000 }, // older than bid(5): kept
        { kind: 'newest', key: 'k2', id: bid(4), ttlMs: 86_400_000 },
      ];
      expect(await client.ackRecording(stream, group, ids, records)).toBe(3);
      expect(
        await client.readRecords(stream, group, [
          { kind: 'acked', id: bid(1) }, // written by that call
          { kind: 'acked', id: bid(9) },
          { kind: 'newest', key: 'k1' },
          { kind: 'newest', key: 'k2' },
          { kind: 'newest', key: 'k3' },
        ]),
      ).toEqual([bid(1), null, bid(5), bid(4), null]);
      expect(Number((await admin.xpending(stream, group))[0])).toBe(0);
      expect(await admin.get(ackedIdKey(stream, group, bid(2)))).toBe(bid(2));
      expect(await admin.pttl(ackedIdKey(stream, group, bid(2)))).toBeGreaterThan(590_000);
      expect(await admin.pttl(newestIdKey(stream, group, 'k2'))).toBeGreaterThan(86_000_000);
      expect(ackedIdKey(stream, group, bid(2))).toBe(
        `${keyInSlotOf(stream, 'echo-dedup', group)}:${bid(2)}`,
      );
      // a newer id raises the record
      await client.ackRecording(
        stream,
        group,
        ['0-1'],
        [{ kind: 'newest', key: 'k1', id: bid(7), ttlMs: 86_400_000 }],
      );
      expect(
        await client.readRecords(stream, group, [
          { kind: 'newest', key: 'k1' },
          { kind: 'acked', id: bid(2) },
        ]),
      ).toEqual([bid(7), bid(2)]);
    }
  });

  it('past the chunks of 1,000 (XACK ids, records); EVAL after a SCRIPT FLUSH', async () => {
    const { stream, ids } = await pendingEntries('many', 'g', 2500);
    const records: SkipRecord[] = ids.map((_, i) => ({
      kind: 'acked',
      id: bid(i),
      ttlMs: 600_000,
    }));
    await admin.script('FLUSH');
    expect(await client.ackRecording(stream, 'g', ids, records)).toBe(2500);
    expect(Number((await admin.xpending(stream, 'g'))[0])).toBe(0);
    const found = await client.readRecords(
      stream,
      'g',
      ids.map((_, i) => ({ kind: 'acked', id: bid(i + 1) })),
    );
    expect(found.slice(0, 2499)).toEqual(ids.slice(1).map((_, i) => bid(i + 1)));
    expect(found[2499]).toBeNull();
  });
});
