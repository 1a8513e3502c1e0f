/**
 * Checkpoints across a crash (docs/delivery.md "Checkpoints"): a consumer process saves a
 * checkpoint inside its handler and is SIGKILLed before the XACK; another process reclaims the
 * entry and its handler sees the checkpoint (attempts 2); once that one acks, the record is gone.
 * The crashing consumer is a separate OS process running the BUILT package.
 */
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Redis } from 'ioredis';
import { EchoStreamModule, StreamHandler, type StreamMessage } from '../../lib';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { waitFor } from '../support/wait-for';
import { assertBuilt } from './support/consumer-fleet';

const SCRIPT = path.join('test', 'faults', 'support', 'checkpoint-process.mjs');
const STREAM = `checkpoint-crash-${process.pid}`;
const GROUP = 'g';

let server: RedisServer;
let redis: Redis;
let survivor: INestApplicationContext | undefined;

beforeAll(async () => {
  assertBuilt();
  server = await RedisServer.start();
  redis = server.client();
});
afterAll(async () => {
  await survivor?.close();
  await stopAllRedisServers();
});

it('a checkpoint saved before a SIGKILL is seen by the process that reclaims the entry, and gone after its XACK', async () => {
  await redis.xgroup('CREATE', STREAM, GROUP, '$', 'MKSTREAM');
  const child = spawn(process.execPath, [SCRIPT], {
    env: {
      PATH: process.env.PATH ?? '',
      REDIS_URL: server.url,
      STREAM,
      GROUP,
      CONSUMER_NAME: 'victim',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.on('exit', (_code, signal) => resolve(signal)),
  );
  await waitFor(() => out.includes('READY'), { timeoutMs: 20_000, message: 'the victim runs' });
  const entryId = (await redis.xadd(STREAM, '*', 'id', 'job-1', 'data', '{"n":1}'))!;
  expect(await exited).toBe('SIGKILL');
  expect(out).toContain(`SAVED ${entryId} 1`);
  const key = `{${STREAM}}:echo-checkpoints:${GROUP}`;
  expect(JSON.parse((await redis.hget(key, entryId))!)).toEqual({ step: 3, by: 'victim' });

  const seen: Array<{ checkpoint: unknown; attempts: number }> = [];
  @Injectable()
  class Survivor {
    @StreamHandler(STREAM, GROUP, { minIdleMs: 1000, claimIntervalMs: 200, blockMs: 500 })
    handle(message: StreamMessage<{ n: number }>): void {
      seen.push({ checkpoint: message.checkpoint, attempts: message.attempts });
    }
  }
  @Module({
    imports: [EchoStreamModule.forRoot({ connection: server.url, consumerName: 'survivor' })],
    providers: [Survivor],
  })
  class SurvivorModule {}
  survivor = await NestFactory.createApplicationContext(SurvivorModule, { logger: false });
  await survivor.init();

  await waitFor(() => seen.length === 1, { timeoutMs: 15_000, message: 'the reclaim' });
  expect(seen[0]).toEqual({ checkpoint: { step: 3, by: 'victim' }, attempts: 2 });
  await waitFor(async () => (await redis.exists(key)) === 0, { message: 'the record gone' });
  const summary = (await redis.xpending(STREAM, GROUP)) as [number];
  expect(Number(summary[0])).toBe(0);
});
