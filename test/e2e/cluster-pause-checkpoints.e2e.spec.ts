/**
 * Pause and checkpoints on a Redis Cluster (3 masters, real redis-servers): the pause keys of one
 * group on streams of different slots are read per slot (one MGET may only name keys of one slot),
 * a pause of one stream holds only that stream's loop, and a checkpoint saved before a retry is
 * seen by the retry and dropped with the XACK on the stream's own master (its hash slot).
 */
import 'reflect-metadata';
import { Injectable, Module, type INestApplicationContext, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Cluster } from 'ioredis';
import {
  ConsumerStats,
  EchoStreamAdmin,
  EchoStreamModule,
  StreamHandler,
  type StreamMessage,
} from '../../lib';
import { RedisCluster } from '../support/redis-cluster';
import { stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

const GROUP = 'g';
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

it('pauses one of two streams of a group in different slots; checkpoints live and die in the slot of their stream', async () => {
  const a = `cp-a-${process.pid}`;
  let b = `cp-b-${process.pid}`;
  // a stream on another master (so another slot): names until one lands there
  for (let i = 0; (await cluster.masterFor(b)) === (await cluster.masterFor(a)); i++) {
    b = `cp-b-${process.pid}-${i}`;
  }
  const handled: Array<{ stream: string; n: number; checkpoint: unknown; attempts: number }> = [];
  @Injectable()
  class Handlers {}
  for (const stream of [a, b]) {
    const method = `on${stream === a ? 'A' : 'B'}`;
    Object.defineProperty(Handlers.prototype, method, {
      value: async (m: StreamMessage<{ n: number }>) => {
        handled.push({ stream, n: m.payload.n, checkpoint: m.checkpoint, attempts: m.attempts });
        if (m.attempts === 1 && m.payload.n === 0) {
          await m.saveCheckpoint({ stream });
          throw new Error('retry me');
        }
      },
      writable: true,
      configurable: true,
    });
    StreamHandler(stream, GROUP, {
      claimIntervalMs: 300,
      blockMs: 2000,
      retry: { type: 'fixed', delayMs: 200 },
    })(Handlers.prototype, method, Object.getOwnPropertyDescriptor(Handlers.prototype, method)!);
  }
  @Module({
    imports: [EchoStreamModule.forRoot({ cluster: { nodes: cluster.nodes }, consumerName: 'c1' })],
    providers: [Handlers as Type],
  })
  class AppModule {}
  app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  await app.init();
  const stats = app.get(ConsumerStats);
  await waitFor(() => stats.snapshot().every((s) => s.state === 'running'), {
    message: 'both running',
  });

  // checkpoints: the first entry of each stream fails once after saving, its retry sees it
  await redis.xadd(a, '*', 'id', 'a0', 'data', JSON.stringify({ n: 0 }));
  await redis.xadd(b, '*', 'id', 'b0', 'data', JSON.stringify({ n: 0 }));
  await waitFor(() => handled.length === 4, { message: 'both entries and their retries' });
  for (const stream of [a, b]) {
    expect(handled.filter((h) => h.stream === stream)).toEqual([
      { stream, n: 0, checkpoint: undefined, attempts: 1 },
      { stream, n: 0, checkpoint: { stream }, attempts: 2 },
    ]);
  }
  await waitFor(
    async () =>
      (await redis.exists(`{${a}}:echo-checkpoints:${GROUP}`)) +
        (await redis.exists(`{${b}}:echo-checkpoints:${GROUP}`)) ===
      0,
    { message: 'both records dropped with their XACK' },
  );

  // pause: only a's loop holds; b goes on
  const admin = app.get(EchoStreamAdmin);
  await admin.pause(a, GROUP);
  await waitFor(() => stats.get(a, GROUP)?.state === 'paused', { message: 'a paused' });
  expect(stats.get(b, GROUP)?.state).toBe('running');
  await redis.xadd(a, '*', 'id', 'a1', 'data', JSON.stringify({ n: 1 }));
  await redis.xadd(b, '*', 'id', 'b1', 'data', JSON.stringify({ n: 1 }));
  await waitFor(() => handled.some((h) => h.stream === b && h.n === 1), { message: 'b1' });
  await sleep(900);
  expect(handled.some((h) => h.stream === a && h.n === 1)).toBe(false);
  await admin.resume(a, GROUP);
  await waitFor(() => handled.some((h) => h.stream === a && h.n === 1), { message: 'a1' });
});
