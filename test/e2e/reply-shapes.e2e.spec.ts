/**
 * Every reply shape RedisStreamsClient parses, pinned on a real redis-server under each way
 * ioredis 6 can hand it over: RESP2, RESP3 with the default `replyMapping: 'legacy'`, and RESP3
 * with `replyMapping: 'resp3'` (maps as objects). Each case asserts the raw ioredis reply too, so
 * a future ioredis that changes a shape fails here, naming the command, before a loop misreads it.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { chosenServer } from '../../scripts/lib/echo-server.mjs';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep } from '../support/wait-for';
import {
  type RawEntry,
  RedisStreamsClient,
  isNoGroupError,
  isWrongTypeError,
} from '../../lib/redis/streams-client';

let server: RedisServer;
let admin: Redis;
let n = 0;
const fresh = () => `shapes-${process.pid}-${++n}`;

beforeAll(async () => {
  server = await RedisServer.start();
  admin = server.client();
});
afterAll(async () => {
  await stopAllRedisServers();
});

const MODES: Array<{ name: string; options: RedisOptions; resp: number }> = [
  { name: 'RESP2', options: { protocol: 2 }, resp: 2 },
  { name: 'RESP3 (ioredis 6 default, legacy mapping)', options: {}, resp: 3 },
  {
    name: "RESP3 with replyMapping 'resp3'",
    options: { protocol: 3, replyMapping: 'resp3' },
    resp: 3,
  },
];

describe.each(MODES)('reply shapes under $name', ({ options, resp }) => {
  let loop: Redis;
  let control: Redis;
  let client: RedisStreamsClient;

  beforeAll(() => {
    loop = server.client({ maxRetriesPerRequest: 0, ...options });
    control = server.client(options);
    client = new RedisStreamsClient(loop, control, 2000);
  });
  afterAll(() => {
    loop.disconnect();
    control.disconnect();
  });

  /** A stream with group `g` and entries a, b read by consumer `c` (both pending). */
  async function streamWithTwoPending(): Promise<{ stream: string; a: string; b: string }> {
    const stream = fresh();
    expect(await client.createGroup(stream, 'g', '0')).toBe(true);
    const [a, b] = await client.addMany([
      { stream, fields: ['data', '"a"'] },
      { stream, fields: ['data', '"b"'] },
    ]);
    const read = await client.readGroup(stream, 'g', 'c', 10, '>');
    expect(read).toEqual([
      { entryId: a, fields: ['data', '"a"'] },
      { entryId: b, fields: ['data', '"b"'] },
    ]);
    return { stream, a, b };
  }

  it('the connection speaks the protocol asked for (CLIENT INFO resp=)', async () => {
    expect(String(await loop.call('CLIENT', 'INFO'))).toContain(`resp=${resp}`);
  });

  it('XREADGROUP: a blocking read that times out is nil, read as no entries', async () => {
    const stream = fresh();
    await client.createGroup(stream, 'g', '$');
    expect(
      await loop.call('XREADGROUP', 'GROUP', 'g', 'c', 'BLOCK', 20, 'STREAMS', stream, '>'),
    ).toBeNull();
    expect(await client.readGroup(stream, 'g', 'c', 10, '>', 50)).toEqual([]);
    // a non-blocking read of an empty PEL: the stream with no entries (not nil)
    expect(await client.readGroup(stream, 'g', 'c', 10, '0')).toEqual([]);
  });

  it('XREADGROUP: the one-stream reply keeps its entries (a map under RESP3)', async () => {
    const stream = fresh();
    await client.createGroup(stream, 'g', '0');
    const id = await client.add(stream, ['data', '1']);
    const raw = await loop.call('XREADGROUP', 'GROUP', 'g', 'c', 'STREAMS', stream, '>');
    const entries = [[id, ['data', '1']]];
    if (resp === 2) expect(raw).toEqual([[stream, entries]]);
    else if (options.replyMapping === 'resp3') expect(raw).toEqual({ [stream]: entries });
    else expect(raw).toEqual([stream, entries]); // the map flattened to [key, value]
    expect(await client.readGroup(stream, 'g', 'c', 10, '0')).toEqual([
      { entryId: id, fields: ['data', '1'] },
    ]);
  });

  // CLAIM is Redis >= 8.4's: the matrix runs this on Redis 8.6, elsewhere it is not asked
  (chosenServer() === 'redis86' ? it : it.skip)(
    'XREADGROUP ... CLAIM: claimed entries first, each with its idle time and count before the read',
    async () => {
      const { stream, a, b } = await streamWithTwoPending();
      const c = await client.add(stream, ['data', '"c"']);
      await sleep(250);
      const raw = await loop.call(
        'XREADGROUP',
        'GROUP',
        'g',
        'c2',
        'COUNT',
        1,
        'CLAIM',
        200,
        'STREAMS',
        stream,
        '>',
      );
      const [row] = (
        resp === 2
          ? (raw as unknown[][])[0][1]
          : options.replyMapping === 'resp3'
            ? (raw as Record<string, unknown[]>)[stream]
            : (raw as unknown[])[1]
      ) as unknown[][];
      expect(row.slice(0, 2)).toEqual([a, ['data', '"a"']]);
      expect(Number(row[2])).toBeGreaterThanOrEqual(200);
      expect(Number(row[3])).toBe(1);
      // the probe has answered: this client's reads claim along
      expect((await client.serverFeatures()).used).toContain('CLAIM');
      const claim = (): Promise<RawEntry[]> =>
        client.readGroup(stream, 'g', 'c3', 10, '>', undefined, undefined, 200);
      // b idle past 200 ms, then c new; a was claimed a moment ago
      expect(await claim()).toEqual([
        { entryId: b, fields: ['data', '"b"'], deliveries: 2 },
        { entryId: c, fields: ['data', '"c"'], deliveries: 1 },
      ]);
      await sleep(250);
      // every one idle again: all three, in stream order, each counted once more
      expect(await claim()).toEqual([
        { entryId: a, fields: ['data', '"a"'], deliveries: 3 },
        { entryId: b, fields: ['data', '"b"'], deliveries: 3 },
        { entryId: c, fields: ['data', '"c"'], deliveries: 2 },
      ]);
    },
  );

  it('XREADGROUP of the PEL: an entry deleted while pending has a nil body', async () => {
    const { stream, a, b } = await streamWithTwoPending();
    await client.remove(stream, [a]);
    expect(await client.readGroup(stream, 'g', 'c', 10, '0')).toEqual([
      { entryId: a, fields: null },
      { entryId: b, fields: ['data', '"b"'] },
    ]);
  });

  it('XAUTOCLAIM: the third element lists deleted ids; claimed entries keep their bodies', async () => {
    const { stream, a, b } = await streamWithTwoPending();
    await client.remove(stream, [a]);
    const raw = (await loop.call(
      'XAUTOCLAIM',
      stream,
      'g',
      'c2',
      0,
      '0-0',
      'COUNT',
      1,
    )) as unknown[];
    expect(raw).toHaveLength(3);
    expect(raw[2]).toEqual([a]);
    const page = await client.autoClaim(stream, 'g', 'c3', 0, String(raw[0]), 10);
    expect(page).toEqual({
      cursor: '0-0',
      entries: [{ entryId: b, fields: ['data', '"b"'] }],
      deletedIds: [],
    });
  });

  it('XPENDING: rows of id, consumer, idle ms and deliveries', async () => {
    const { stream, a, b } = await streamWithTwoPending();
    const rows = await client.pending(stream, 'g', { start: '-', end: '+', count: 10 });
    expect(rows.map((r) => [r.entryId, r.consumer, r.deliveries])).toEqual([
      [a, 'c', 1],
      [b, 'c', 1],
    ]);
    for (const row of rows) expect(row.idleMs).toBeGreaterThanOrEqual(0);
    expect(
      await client.pending(stream, 'g', { minIdleMs: 60_000, start: '-', end: '+', count: 10 }),
    ).toEqual([]);
  });

  it('XCLAIM: bodies of won entries; JUSTID touch and release succeed', async () => {
    const { stream, a, b } = await streamWithTwoPending();
    await client.touch(stream, 'g', 'c', [a]);
    await client.release(stream, 'g', 'c', [b], 60_000, [1]);
    expect(await client.claim(stream, 'g', 'c2', 30_000, [a, b])).toEqual([
      { entryId: b, fields: ['data', '"b"'] },
    ]);
  });

  it('XINFO GROUPS / CONSUMERS: map rows (flat arrays or objects) read by name', async () => {
    const { stream, b } = await streamWithTwoPending();
    const raw = ((await loop.call('XINFO', 'GROUPS', stream)) as unknown[])[0];
    expect(Array.isArray(raw)).toBe(options.replyMapping !== 'resp3');
    expect(await client.groups(stream)).toEqual([
      { name: 'g', pending: 2, lag: 0, lastDeliveredId: b },
    ]);
    const consumers = await client.consumers(stream, 'g');
    expect(consumers.map((c) => [c.name, c.pending])).toEqual([['c', 2]]);
    expect(consumers[0].idleMs).toBeGreaterThanOrEqual(0);
    expect(await client.groups(fresh())).toEqual([]); // ERR no such key
  });

  it('CONFIG GET: one value, whether the map is flat or an object', async () => {
    expect(await client.config('maxmemory-policy')).toBe('noeviction');
    expect(await client.config('no-such-parameter')).toBeNull();
  });

  it('CLIENT UNBLOCK wakes a parked read with no entries, on the same connection', async () => {
    const stream = fresh();
    await client.createGroup(stream, 'g', '$');
    const idBefore = Number(await loop.call('CLIENT', 'ID'));
    const started = Date.now();
    const parked = client.readGroup(stream, 'g', 'c', 10, '>', 5000);
    await new Promise((r) => setTimeout(r, 100));
    await client.interruptRead();
    expect(await parked).toEqual([]);
    expect(Date.now() - started).toBeLessThan(4000); // woken, not timed out at 5 s
    // UNBLOCK, not a dropped link: the connection (and its CLIENT ID) is the same
    expect(Number(await loop.call('CLIENT', 'ID'))).toBe(idBefore);
    expect(Number(await control.call('CLIENT', 'UNBLOCK', idBefore))).toBe(0); // nothing parked now
  });

  it('errors: BUSYGROUP, NOGROUP and WRONGTYPE are ReplyErrors recognised by prefix', async () => {
    const stream = fresh();
    expect(await client.createGroup(stream, 'g', '0')).toBe(true);
    expect(await client.createGroup(stream, 'g', '0')).toBe(false);
    const noGroup = await client.readGroup(stream, 'nope', 'c', 1, '>').catch((e: unknown) => e);
    expect(noGroup).toMatchObject({ name: 'ReplyError' });
    expect(isNoGroupError(noGroup)).toBe(true);
    const key = fresh();
    await admin.set(key, 'x');
    const wrongType = await client.readGroup(key, 'g', 'c', 1, '>').catch((e: unknown) => e);
    expect(isWrongTypeError(wrongType)).toBe(true);
    const pipelined = await client
      .addMany([
        { stream, fields: ['data', '1'] },
        { stream: key, fields: ['data', '2'] },
      ])
      .catch((e: unknown) => e);
    expect(isWrongTypeError(pipelined)).toBe(true);
    expect(await client.length(stream)).toBe(1); // the first XADD of the pipeline went through
  });
});
