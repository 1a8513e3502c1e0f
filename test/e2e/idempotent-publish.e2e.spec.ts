/**
 * Idempotent publish (docs/publishing.md "Idempotent publish") against a real server: a branded
 * id is written to a stream once per `idempotencyWindowMs`, repeats (racing or not, inside one
 * `publishMany` or after a lost reply) answer the first write's receipt and write nothing; off by
 * default. Counted on the server: the entries carrying each id. Under `npm run test:servers` on
 * Redis 8.6 the same specs run on the server's IDMP (idmp-publish.e2e.spec.ts covers that path).
 */
import 'reflect-metadata';
import type { INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import {
  EchoStreamModule,
  EchoStreamPublishError,
  StreamProducer,
  type EchoStreamModuleOptions,
} from '../../lib';
import { chosenServer } from '../../scripts/lib/echo-server.mjs';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { TcpProxy } from '../support/tcp-proxy';
import { sleep } from '../support/wait-for';

let server: RedisServer;
let redis: Redis;
const apps: INestApplicationContext[] = [];
const proxies: TcpProxy[] = [];
let n = 0;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
  await Promise.all(proxies.splice(0).map((proxy) => proxy.stop()));
});
afterAll(async () => {
  await stopAllRedisServers();
});

const fresh = (prefix: string) => `${prefix}-${process.pid}-${++n}`;
/** Redis 8.6 keeps the ids itself (IDMP), its window in whole seconds; elsewhere the script. */
const NATIVE = chosenServer() === 'redis86';

async function producerOn(
  connection: string,
  extra: EchoStreamModuleOptions = {},
): Promise<StreamProducer> {
  const moduleRef = await Test.createTestingModule({
    imports: [EchoStreamModule.forRoot({ connection, ...extra })],
  }).compile();
  const app = moduleRef.createNestApplication();
  apps.push(app);
  await app.init();
  return app.get(StreamProducer);
}

/** The entry ids of `stream` carrying branded id `id`, read straight from the server. */
async function entriesWithId(stream: string, id: string): Promise<string[]> {
  const entries = await redis.xrange(stream, '-', '+');
  return entries.filter(([, fields]) => fields[0] === 'id' && fields[1] === id).map(([e]) => e);
}

describe('idempotent publish', () => {
  it('20 concurrent publishes under one id write exactly one entry; all 20 receipts carry its entry id', async () => {
    const producer = await producerOn(server.url);
    const stream = fresh('race');
    const id = 'order-42';
    const receipts = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        producer.publish(stream, { attempt: i }, { id, idempotent: true }),
      ),
    );
    const written = await entriesWithId(stream, id);
    expect(written).toHaveLength(1);
    expect(await redis.xlen(stream)).toBe(1);
    expect(receipts).toEqual(new Array(20).fill({ id, entryId: written[0] }));
  });

  it('a repeat within the window writes nothing and answers the first receipt; after the window it writes a new entry', async () => {
    const producer = await producerOn(server.url, { idempotencyWindowMs: 300 });
    const stream = fresh('window');
    const first = await producer.publish(stream, { v: 1 }, { id: 'a', idempotent: true });
    const repeat = await producer.publish(stream, { v: 2 }, { id: 'a', idempotent: true });
    expect(repeat).toEqual(first);
    expect(await redis.xlen(stream)).toBe(1);
    // IDMP holds an id for whole seconds (300 ms is rounded up to 1 s) on a clock of seconds
    await sleep(NATIVE ? 2200 : 400);
    const later = await producer.publish(stream, { v: 3 }, { id: 'a', idempotent: true });
    expect(later.entryId).not.toBe(first.entryId);
    expect(await entriesWithId(stream, 'a')).toEqual([first.entryId, later.entryId]);
  });

  it('publishMany with repeats inside the batch and of an earlier publish writes each id once, in order', async () => {
    const producer = await producerOn(server.url);
    const stream = fresh('many');
    const earlier = await producer.publish(stream, { v: 0 }, { id: 'x', idempotent: true });
    const receipts = await producer.publishMany(stream, [1, 2, 3, 4, 5], {
      ids: ['a', 'b', 'a', 'x', 'b'],
      idempotent: true,
    });
    const entries = await redis.xrange(stream, '-', '+');
    expect(entries.map(([, fields]) => [fields[1], fields[3]])).toEqual([
      ['x', '{"v":0}'],
      ['a', '1'],
      ['b', '2'],
    ]);
    const [, a, b] = entries.map(([entryId]) => entryId);
    expect(receipts).toEqual([
      { id: 'a', entryId: a },
      { id: 'b', entryId: b },
      { id: 'a', entryId: a },
      { id: 'x', entryId: earlier.entryId },
      { id: 'b', entryId: b },
    ]);
  });

  it('the module option producer.idempotent makes it the default; a call says idempotent: false to write anyway', async () => {
    const producer = await producerOn(server.url, { producer: { idempotent: true } });
    const stream = fresh('default');
    const first = await producer.publish(stream, 1, { id: 'd' });
    expect(await producer.publish(stream, 2, { id: 'd' })).toEqual(first);
    expect(await redis.xlen(stream)).toBe(1);
    await producer.publish(stream, 3, { id: 'd', idempotent: false });
    expect(await entriesWithId(stream, 'd')).toHaveLength(2);
  });

  it('off by default: a repeated id is written again and no index key is created', async () => {
    const producer = await producerOn(server.url);
    const stream = fresh('plain');
    await producer.publish(stream, 1, { id: 'p' });
    await producer.publish(stream, 2, { id: 'p' });
    await producer.publishMany(stream, [3, 4], { ids: ['p', 'p'] });
    expect(await entriesWithId(stream, 'p')).toHaveLength(4);
    expect(await redis.keys(`*${stream}*echo-idem*`)).toEqual([]);
    expect(await redis.keys(`{${stream}}*`)).toEqual([]);
  });

  it('a publish that failed with written: unknown (reply lost, connection cut) retried under the same id writes no duplicate', async () => {
    const proxy = await TcpProxy.start(server.port);
    proxies.push(proxy);
    const producer = await producerOn(`redis://127.0.0.1:${proxy.port}`, {
      publishTimeoutMs: 1500,
    });
    const stream = fresh('lost-reply');
    await producer.publish(stream, 0, { id: 'warm-up', idempotent: true }); // script loaded
    proxy.dropNextReply();
    const err = await producer
      .publish(stream, { v: 1 }, { id: 'lost', idempotent: true })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EchoStreamPublishError);
    expect(err).toMatchObject({ written: 'unknown', ids: ['lost'] });
    const written = await entriesWithId(stream, 'lost');
    expect(written).toHaveLength(1); // the write did happen: only its reply was lost
    proxy.cutAll();
    // retried as a caller would: until one answers (a retry may meet the link still going down)
    let retry: unknown;
    for (let attempt = 0; attempt < 30 && retry === undefined; attempt++) {
      retry = await producer
        .publish(stream, { v: 1 }, { id: 'lost', idempotent: true })
        .catch(async (e: unknown) => {
          expect(e).toBeInstanceOf(EchoStreamPublishError);
          await sleep(100);
          return undefined;
        });
    }
    expect(retry).toEqual({ id: 'lost', entryId: written[0] });
    expect(await entriesWithId(stream, 'lost')).toEqual(written);
  });

  it('refuses a bad option before anything is written', async () => {
    const producer = await producerOn(server.url);
    const stream = fresh('bad');
    await expect(
      producer.publish(stream, 1, { idempotent: 'yes' as unknown as boolean }),
    ).rejects.toThrow(/option 'idempotent' must be a boolean, got 'yes'/);
    await expect(producer.publishMany(stream, [1, 2], { ids: ['a'] })).rejects.toThrow(
      /option 'ids' must be an array of 2 id\(s\), one per payload, got 1 id\(s\)/,
    );
    expect(await redis.exists(stream)).toBe(0);
  });

  (NATIVE ? it.skip : it)(
    'memory: the index holds one key per id for the window (bytes per 1,000 ids measured)',
    async () => {
      const producer = await producerOn(server.url);
      const stream = fresh('memory');
      const ids = Array.from({ length: 1000 }, (_, i) => `m${String(i).padStart(4, '0')}`);
      await producer.publishMany(stream, ids.slice(0, 1), { ids: ids.slice(0, 1) }); // the stream exists
      const before = await usedMemory();
      const streamBefore = Number(await redis.call('MEMORY', 'USAGE', stream));
      const branded = Array.from({ length: 1000 }, (_, i) => `${String(i).padStart(24, '0')}`);
      for (let i = 0; i < 1000; i += 100) {
        const part = branded.slice(i, i + 100);
        await producer.publishMany(stream, part, { ids: part, idempotent: true });
      }
      const after = await usedMemory();
      const streamAfter = Number(await redis.call('MEMORY', 'USAGE', stream));
      const indexBytes = after - before - (streamAfter - streamBefore);
      const keys = await redis.keys(`{${stream}}:echo-idem::*`);
      expect(keys).toHaveLength(1000);
      const ttl = await redis.pttl(keys[0]);
      expect(ttl).toBeGreaterThan(590_000);
      expect(ttl).toBeLessThanOrEqual(600_000);
      const perKey = Number(await redis.call('MEMORY', 'USAGE', keys[0]));
      console.log(
        `idempotency index: ${indexBytes} bytes per 1,000 ids (used_memory delta, stream excluded); ` +
          `MEMORY USAGE of one key ${perKey} bytes; key ${keys[0]}`,
      );
      expect(indexBytes).toBeGreaterThan(1000 * 40);
      expect(indexBytes).toBeLessThan(1000 * 400);
    },
  );
});

async function usedMemory(): Promise<number> {
  const info = await redis.info('memory');
  return Number(/^used_memory:(\d+)/m.exec(info)?.[1]);
}
