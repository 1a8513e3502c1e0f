/**
 * Idempotent publish on the server's own IDMP (docs/publishing.md "Idempotent publish", Redis
 * 8.6), and the script where IDMP cannot keep the promise: the path taken is read from the
 * server (XINFO STREAM's IDMP counters, the script's index keys). On every other server of the
 * matrix the same cases prove the script path is the one taken.
 */
import 'reflect-metadata';
import type { Redis } from 'ioredis';
import { StreamProducer, type EchoStreamModuleOptions } from '../../lib';
import { mapReply } from '../../lib/redis/connection/reply-shapes';
import { chosenServer } from '../../scripts/lib/echo-server.mjs';
import { CaptureLogger } from '../faults/support/nest-app';
import { bootApp, closeApps } from '../support/lifecycle-apps';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';

let server: RedisServer;
let redis: Redis;
let seq = 0;
const fresh = (): string => `idmp-${process.pid}-${++seq}`;
/** Redis 8.6 answers IDMP; every other build of the matrix takes the script. */
const NATIVE = chosenServer() === 'redis86';

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterEach(closeApps);
afterAll(async () => {
  await stopAllRedisServers();
});

/** The producer of an app of the module on the test server (no handlers). */
async function producerOn(
  extra: EchoStreamModuleOptions = {},
  logger = new CaptureLogger(),
): Promise<StreamProducer> {
  const { app } = await bootApp({ connection: server.url, ...extra }, [], logger);
  return app.get(StreamProducer);
}

/** XINFO STREAM as a map (the IDMP fields are absent on servers without it). */
async function info(stream: string): Promise<Map<string, unknown>> {
  return mapReply(await redis.call('XINFO', 'STREAM', stream));
}

/** The script's index keys of `stream` (one per id it wrote within the window). */
async function indexKeys(stream: string): Promise<string[]> {
  return redis.keys(`{${stream}}:echo-idem::*`);
}

/** The branded ids of `stream`'s entries, in order. */
async function idsIn(stream: string): Promise<string[]> {
  return (await redis.xrange(stream, '-', '+')).map(([, fields]) => fields[1]);
}

/** A repeat written once, by the script: its index key written, IDMP's counters still. */
async function expectScriptPath(producer: StreamProducer): Promise<void> {
  const stream = fresh();
  await producer.publish(stream, 1, { id: 'a', idempotent: true });
  await producer.publish(stream, 2, { id: 'a', idempotent: true });
  expect(await idsIn(stream)).toEqual(['a']);
  expect(await indexKeys(stream)).toHaveLength(1);
  expect((await info(stream)).get('iids-added') ?? 0).toBe(0);
}

describe('idempotent publish on the server (IDMP)', () => {
  it(
    NATIVE
      ? 'Redis 8.6 keeps the ids itself: IDMP counters move, no index key is written, the window is the module’s'
      : 'this server has no IDMP: the script writes its index keys',
    async () => {
      const producer = await producerOn();
      const stream = fresh();
      await producer.publishMany(stream, [1, 2, 3, 4, 5], {
        ids: ['a', 'b', 'c', 'd', 'e'],
        idempotent: true,
      });
      await producer.publish(stream, 6, { id: 'b', idempotent: true });
      await producer.publishMany(stream, [7, 8], { ids: ['e', 'f'], idempotent: true });
      expect(await idsIn(stream)).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
      const got = await info(stream);
      if (NATIVE) {
        expect(got.get('idmp-duration')).toBe(600);
        expect(got.get('idmp-maxsize')).toBe(10_000);
        expect(got.get('iids-added')).toBe(6);
        expect(got.get('iids-duplicates')).toBe(2);
        expect(await indexKeys(stream)).toEqual([]);
      } else {
        expect(got.has('iids-added')).toBe(false);
        expect(await indexKeys(stream)).toHaveLength(6);
      }
    },
  );

  it("serverFeatures: 'baseline' takes the script on any server", async () => {
    const producer = await producerOn({ serverFeatures: 'baseline' });
    await expectScriptPath(producer);
  });

  it('a stream that does not exist yet is set up before its first write: no entry, id or group left by the setup', async () => {
    const producer = await producerOn();
    const stream = fresh();
    const first = await producer.publish(stream, 1, { id: 'only', idempotent: true });
    expect(await producer.publish(stream, 2, { id: 'only', idempotent: true })).toEqual(first);
    const got = await info(stream);
    expect(got.get('entries-added')).toBe(1);
    expect(got.get('groups')).toBe(0);
    expect((await redis.xrange(stream, '-', '+')).map(([id]) => id)).toEqual([first.entryId]);
  });

  it('two apps publishing the same ids at once write each once (the producer id comes from the branded id)', async () => {
    const [one, two] = await Promise.all([producerOn(), producerOn()]);
    const stream = fresh();
    const ids = Array.from({ length: 50 }, (_, i) => `order-${i}`);
    const receipts = await Promise.all(
      ids.flatMap((id) => [
        one.publish(stream, { from: 1 }, { id, idempotent: true }),
        two.publish(stream, { from: 2 }, { id, idempotent: true }),
      ]),
    );
    expect((await idsIn(stream)).sort()).toEqual([...ids].sort());
    for (let i = 0; i < receipts.length; i += 2) expect(receipts[i]).toEqual(receipts[i + 1]);
  });

  it('a stream deleted after its setup is set up again: its window stays the module’s', async () => {
    const producer = await producerOn();
    const stream = fresh();
    await producer.publish(stream, 1, { id: 'a', idempotent: true });
    await redis.del(stream);
    const again = await producer.publish(stream, 2, { id: 'b', idempotent: true });
    expect(await producer.publish(stream, 3, { id: 'b', idempotent: true })).toEqual(again);
    expect(await idsIn(stream)).toEqual(['b']);
    if (NATIVE) expect((await info(stream)).get('idmp-duration')).toBe(600);
    // a batch (one script call on IDMP) meets a deleted stream the same way
    await redis.del(stream);
    await producer.publishMany(stream, [4, 5, 6], { ids: ['c', 'd', 'c'], idempotent: true });
    expect(await idsIn(stream)).toEqual(['c', 'd']);
    if (NATIVE) expect((await info(stream)).get('idmp-duration')).toBe(600);
  });

  it('a longer window already set on the stream is kept, and with it the ids it holds', async () => {
    const long = await producerOn({ idempotencyWindowMs: 1_200_000 });
    const stream = fresh();
    const first = await long.publish(stream, 1, { id: 'k', idempotent: true });
    const short = await producerOn({ idempotencyWindowMs: 600_000 });
    expect(await short.publish(stream, 2, { id: 'k', idempotent: true })).toEqual(first);
    expect(await idsIn(stream)).toEqual(['k']);
    if (NATIVE) expect((await info(stream)).get('idmp-duration')).toBe(1200);
  });

  it('a window past IDMP’s ceiling (24 h) takes the script', async () => {
    const producer = await producerOn({ idempotencyWindowMs: 25 * 3_600_000 });
    await expectScriptPath(producer);
  });

  // XCFGSET is a command of Redis 8.6 only: elsewhere an ACL cannot name it
  (NATIVE ? it : it.skip)(
    'an ACL without XCFGSET: the script, said in one warning, repeats still written once',
    async () => {
      const user = `nocfg${process.pid}${++seq}`;
      await redis.call('ACL', 'SETUSER', user, 'on', '>pw', '~*', '&*', '+@all', '-xcfgset');
      const url = new URL(server.url);
      url.username = user;
      url.password = 'pw';
      const logger = new CaptureLogger();
      const producer = await producerOn({ connection: url.toString() }, logger);
      const [s1, s2] = [fresh(), fresh()];
      for (const stream of [s1, s2]) {
        await producer.publish(stream, 1, { id: 'a', idempotent: true });
        await producer.publish(stream, 2, { id: 'a', idempotent: true });
        expect(await idsIn(stream)).toEqual(['a']);
        expect(await indexKeys(stream)).toHaveLength(1);
      }
      const warnings = logger.matching(/IDMP/);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain(`Idempotent publish to ${s1} uses the script`);
      expect(warnings[0]).toContain('grant +xcfgset');
      expect(warnings[0]).not.toContain('pw');
    },
  );

  (NATIVE ? it : it.skip)(
    'memory: what IDMP holds per 1,000 ids (MEMORY USAGE of the stream, entries excluded)',
    async () => {
      const producer = await producerOn();
      const plain = fresh();
      const stream = fresh();
      const ids = Array.from({ length: 1000 }, (_, i) => String(i).padStart(24, '0'));
      for (let i = 0; i < 1000; i += 100) {
        const part = ids.slice(i, i + 100);
        await producer.publishMany(stream, part, { ids: part, idempotent: true });
        await producer.publishMany(plain, part, { ids: part });
      }
      const usage = async (key: string) =>
        Number(await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
      const idmpBytes = (await usage(stream)) - (await usage(plain));
      console.log(
        `IDMP: ${idmpBytes} bytes per 1,000 ids (MEMORY USAGE, the same entries excluded)`,
      );
      expect((await info(stream)).get('iids-tracked')).toBe(1000);
      expect(idmpBytes).toBeGreaterThan(0);
    },
  );
});
