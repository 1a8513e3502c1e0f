/**
 * Checkpoints (StreamMessage.saveCheckpoint / checkpoint; docs/delivery.md "Checkpoints"), on a
 * real redis-server through the Nest module: a retry sees the last value saved, the record goes
 * away with the entry's XACK and with its dead letter, and a first delivery costs no command
 * (INFO commandstats: no HMGET; no HSET/HDEL unless the handler saves). Each test states the
 * invariant it checks. The crash case (another process reclaims) is in
 * test/faults/checkpoint-crash.fault.spec.ts.
 */
import 'reflect-metadata';
import { Injectable, Module, type INestApplicationContext, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Redis } from 'ioredis';
import {
  EchoStreamModule,
  NonRetryableError,
  StreamHandler,
  type StreamHandlerOptions,
  type StreamMessage,
} from '../../lib';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

const GROUP = 'g';
let server: RedisServer;
let redis: Redis;
let seq = 0;
const apps = new Set<INestApplicationContext>();
const fresh = (): string => `checkpoints-${process.pid}-${++seq}`;
const keyOf = (stream: string): string => `{${stream}}:echo-checkpoints:${GROUP}`;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterEach(async () => {
  await Promise.all([...apps].map((app) => app.close()));
  apps.clear();
});
afterAll(async () => {
  await stopAllRedisServers();
});

type Handle = (message: StreamMessage<{ n: number }>) => unknown;

async function boot(
  stream: string,
  handle: Handle,
  options: Partial<StreamHandlerOptions> = {},
): Promise<void> {
  @Injectable()
  class CheckpointHandler {
    handle(message: StreamMessage<{ n: number }>): unknown {
      return handle(message);
    }
  }
  const descriptor = Object.getOwnPropertyDescriptor(CheckpointHandler.prototype, 'handle')!;
  StreamHandler(stream, GROUP, { blockMs: 500, ...options })(
    CheckpointHandler.prototype,
    'handle',
    descriptor,
  );
  @Module({
    imports: [EchoStreamModule.forRoot({ connection: server.url, consumerName: `c${++seq}` })],
    providers: [CheckpointHandler as Type],
  })
  class AppModule {}
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  apps.add(app);
  await app.init();
}

/** Calls per command since the last `CONFIG RESETSTAT`. */
async function commandCalls(): Promise<Record<string, number>> {
  const info = await redis.info('commandstats');
  const calls: Record<string, number> = {};
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    calls[match[1]] = Number(match[2]);
  }
  return calls;
}

async function pendingCount(stream: string): Promise<number> {
  const summary = (await redis.xpending(stream, GROUP)) as [number];
  return Number(summary[0]);
}

it('a retry sees the last checkpoint saved; after the XACK the record is gone', async () => {
  const stream = fresh();
  const seen: Array<{ attempts: number; checkpoint: unknown }> = [];
  await boot(
    stream,
    async (m) => {
      seen.push({ attempts: m.attempts, checkpoint: m.checkpoint });
      const step = (m.checkpoint as { step: number } | undefined)?.step ?? 0;
      if (m.attempts === 1) {
        await m.saveCheckpoint({ step: step + 1 });
        await m.saveCheckpoint({ step: step + 2 }); // the last value saved wins
        throw new Error('halfway');
      }
      await m.saveCheckpoint({ step: step + 1 });
    },
    { retry: { type: 'fixed', delayMs: 200 } },
  );
  const entryId = (await redis.xadd(stream, '*', 'id', 'job', 'data', '{"n":1}'))!;
  await waitFor(() => seen.length === 2, { message: 'the retry' });
  expect(seen).toEqual([
    { attempts: 1, checkpoint: undefined },
    { attempts: 2, checkpoint: { step: 2 } },
  ]);
  await waitFor(async () => (await pendingCount(stream)) === 0, { message: 'acked' });
  expect(await redis.hexists(keyOf(stream), entryId)).toBe(0);
  expect(await redis.exists(keyOf(stream))).toBe(0);
});

it('a dead-lettered entry takes its record with it', async () => {
  const stream = fresh();
  let calls = 0;
  await boot(stream, async (m) => {
    calls++;
    await m.saveCheckpoint({ tried: m.attempts });
    throw new NonRetryableError('no way');
  });
  const entryId = (await redis.xadd(stream, '*', 'id', 'job', 'data', '{"n":1}'))!;
  await waitFor(async () => (await redis.xlen(`${stream}:dlq`)) === 1, { message: 'dead letter' });
  await waitFor(async () => (await pendingCount(stream)) === 0, { message: 'acked' });
  expect(calls).toBe(1);
  expect(await redis.hexists(keyOf(stream), entryId)).toBe(0);
});

it('a first delivery costs no command: no HMGET ever, HSET/HDEL only for a handler that saves', async () => {
  const quiet = fresh();
  const saving = fresh();
  let handled = 0;
  await boot(quiet, () => void handled++);
  await boot(saving, async (m) => {
    await m.saveCheckpoint(m.payload.n);
    handled++;
  });
  await sleep(300);
  await redis.config('RESETSTAT');
  for (let n = 0; n < 10; n++) {
    await redis.xadd(quiet, '*', 'id', `q${n}`, 'data', JSON.stringify({ n }));
    await redis.xadd(saving, '*', 'id', `s${n}`, 'data', JSON.stringify({ n }));
  }
  await waitFor(() => handled === 20, { message: 'all handled' });
  await waitFor(async () => (await pendingCount(quiet)) + (await pendingCount(saving)) === 0, {
    message: 'all acked',
  });
  const calls = await commandCalls();
  expect(calls.hmget ?? 0).toBe(0);
  // one HSET per save, and its HDEL rides along the XACKs of the saving stream only
  expect(calls.hset).toBe(10);
  expect(calls.hdel ?? 0).toBeGreaterThanOrEqual(1);
  expect(calls.hdel ?? 0).toBeLessThanOrEqual(calls.xack);
  expect(await redis.exists(keyOf(saving))).toBe(0);
  expect(await redis.exists(keyOf(quiet))).toBe(0);
});

it('saveCheckpoint refuses a value JSON cannot hold (the handler sees a TypeError)', async () => {
  const stream = fresh();
  const errors: unknown[] = [];
  await boot(stream, async (m) => {
    await m.saveCheckpoint(undefined).catch((err: unknown) => errors.push(err));
  });
  await redis.xadd(stream, '*', 'id', 'job', 'data', '{"n":1}');
  await waitFor(() => errors.length === 1, { message: 'the refusal' });
  expect(errors[0]).toBeInstanceOf(TypeError);
  expect(String(errors[0])).toMatch(/saveCheckpoint\(\) of entry \d+-\d+ needs a JSON value/);
});
