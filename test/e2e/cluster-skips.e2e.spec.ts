/**
 * Duplicates and stale replays skipped on a Redis Cluster (3 masters, real redis-servers;
 * docs/delivery.md "Duplicates and stale replays"): the records live in the stream's hash slot,
 * are written in the XACK's script call on the stream's own master, and the look-up of a read
 * sent ahead rides in that call; a backlog with each id published twice, and each key's older
 * entry after its newer one, runs every id once and no stale entry. Also `deleteOnAck`
 * (docs/delivery.md "Deleting acknowledged entries") on streams of two masters, and the newer
 * server verbs asked of every master.
 */
import 'reflect-metadata';
import { Injectable, Module, type INestApplicationContext, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Cluster } from 'ioredis';
import {
  brandedId,
  ConsumerStats,
  EchoStreamModule,
  StreamHandler,
  type StreamMessage,
} from '../../lib';
import { keySlot } from '../../lib/redis/connection/cluster-routing';
import { RedisCluster } from '../support/redis-cluster';
import { stopAllRedisServers } from '../support/redis-server';
import { waitFor } from '../support/wait-for';
import { chosenServer } from '../../scripts/lib/echo-server.mjs';

const GROUP = 'g';
const BATCH = 20;
let cluster: RedisCluster;
let redis: Cluster;
let app: INestApplicationContext | undefined;

beforeAll(async () => {
  cluster = await RedisCluster.start();
  redis = cluster.client();
});
afterAll(async () => {
  await app?.close();
  await cluster?.stop();
  await stopAllRedisServers();
});

it("dedup and newerWins on two streams of different masters: every id runs once, no stale entry runs, the records sit in each stream's slot", async () => {
  const dedupStream = `skips-dedup-${process.pid}`;
  let newerStream = `skips-newer-${process.pid}`;
  for (
    let i = 0;
    (await cluster.masterFor(newerStream)) === (await cluster.masterFor(dedupStream));
    i++
  )
    newerStream = `skips-newer-${process.pid}-${i}`;
  // a backlog before the app starts: full reads, so reads are sent ahead and looked up with acks
  const ids: string[] = [];
  for (let b = 0; b < 10; b++) {
    const batch = Array.from({ length: BATCH }, (_, i) => `order-${b}-${i}`);
    for (const id of batch) await redis.xadd(dedupStream, '*', 'id', id, 'data', '{}');
    for (const id of batch) await redis.xadd(dedupStream, '*', 'id', id, 'data', '{"copy":true}');
    ids.push(...batch);
  }
  const stale = new Set<string>();
  for (let b = 0; b < 10; b++) {
    const keys = Array.from({ length: BATCH }, (_, i) => `acct-${b}-${i}`);
    const older = keys.map(() => brandedId());
    const newer = keys.map(() => brandedId());
    for (let i = 0; i < BATCH; i++)
      await redis.xadd(
        newerStream,
        '*',
        'id',
        newer[i],
        'data',
        JSON.stringify({ account: keys[i] }),
      );
    for (let i = 0; i < BATCH; i++)
      stale.add(
        String(
          await redis.xadd(
            newerStream,
            '*',
            'id',
            older[i],
            'data',
            JSON.stringify({ account: keys[i] }),
          ),
        ),
      );
  }
  const runs = new Map<string, number>();
  const newerRan: string[] = [];
  @Injectable()
  class Handlers {
    @StreamHandler(dedupStream, GROUP, { dedup: true, batchSize: BATCH, startId: '0' })
    onOrder(m: StreamMessage<unknown>): void {
      runs.set(m.id, (runs.get(m.id) ?? 0) + 1);
    }

    @StreamHandler(newerStream, GROUP, {
      newerWins: (m: StreamMessage<never>) => (m.payload as { account: string }).account,
      batchSize: BATCH,
      startId: '0',
    })
    onAccount(m: StreamMessage<unknown>): void {
      newerRan.push(m.entryId);
    }
  }
  @Module({
    imports: [EchoStreamModule.forRoot({ cluster: { nodes: cluster.nodes }, consumerName: 'c1' })],
    providers: [Handlers as Type],
  })
  class AppModule {}
  app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  await app.init();
  const stats = app.get(ConsumerStats);
  await waitFor(
    () =>
      stats.snapshot().reduce((sum, s) => sum + s.totalAcked, 0) ===
      ids.length * 2 + stale.size * 2,
    { timeoutMs: 30_000, message: 'every entry of both streams acked' },
  );
  expect([...runs].filter(([, count]) => count > 1)).toEqual([]);
  expect(runs.size).toBe(ids.length);
  expect(newerRan.filter((entryId) => stale.has(entryId))).toEqual([]);
  expect(newerRan).toHaveLength(stale.size);
  const byStream = new Map(stats.snapshot().map((s) => [s.stream, s]));
  expect(byStream.get(dedupStream)).toMatchObject({ totalDuplicates: ids.length });
  expect(byStream.get(newerStream)).toMatchObject({ totalStale: stale.size });
  // the records are in each stream's slot, on its master
  const dedupKey = `{${dedupStream}}:echo-dedup::${GROUP}:order-0-0`;
  expect(keySlot(dedupKey)).toBe(keySlot(dedupStream));
  expect(await redis.get(dedupKey)).toBe('order-0-0');
  const newestKey = `{${newerStream}}:echo-newest::${GROUP}:acct-0-0`;
  expect(keySlot(newestKey)).toBe(keySlot(newerStream));
  expect(await redis.get(newestKey)).toMatch(/^[0-9a-z]{24}$/);
});

it("deleteOnAck on a stream of each master (true, and 'acked-by-all' beside a plain group): the acks and the sweep reach each stream's master; every master is asked for its verbs", async () => {
  await app?.close();
  const streams = await Promise.all(
    cluster.servers.map(async (master, i) => {
      for (let n = 0; ; n++) {
        const name = `doa-${process.pid}-${i}-${n}`;
        if ((await cluster.masterFor(name)) === master) return name;
      }
    }),
  );
  const [whole, shared] = streams;
  await redis.xgroup('CREATE', shared, 'other', '0', 'MKSTREAM');
  @Injectable()
  class Handlers {
    @StreamHandler(whole, GROUP, { deleteOnAck: true })
    onWhole(): void {}
    @StreamHandler(shared, GROUP, { deleteOnAck: 'acked-by-all' })
    onShared(): void {}
  }
  @Module({
    imports: [EchoStreamModule.forRoot({ cluster: { nodes: cluster.nodes }, consumerName: 'c2' })],
    providers: [Handlers as Type],
  })
  class AppModule {}
  app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  await app.init();
  for (let n = 0; n < 10; n++) {
    await redis.xadd(whole, '*', 'id', `w-${n}`, 'data', '{}');
    await redis.xadd(shared, '*', 'id', `s-${n}`, 'data', '{}');
  }
  await waitFor(async () => (await redis.xlen(whole)) === 0, { message: `${whole} emptied` });
  await waitFor(async () => Number(((await redis.xpending(shared, GROUP)) as [number])[0]) === 0, {
    message: `${shared} acked`,
  });
  expect(await redis.xlen(shared)).toBe(10); // 'other' has yet to read them
  const read = (await redis.xreadgroup('GROUP', 'other', 'w', 'STREAMS', shared, '>')) as Array<
    [string, Array<[string, string[]]>]
  >;
  await redis.xack(shared, 'other', ...read[0][1].map(([id]) => id));
  await waitFor(async () => (await redis.xlen(shared)) === 0, {
    timeoutMs: 8000,
    message: `${shared} emptied after the last group's acks`,
  });
  const features = await app.get(ConsumerStats).serverFeatures();
  expect(features.error).toBeUndefined();
  expect(features.available).toEqual(
    chosenServer() === 'redis86' ? ['CLAIM', 'IDMP', 'XACKDEL'] : [],
  );
});
