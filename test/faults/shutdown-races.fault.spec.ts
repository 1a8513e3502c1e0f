/**
 * Shutdown racing other work (issue 10, defects 2 and 3), through the Nest glue:
 *
 * - an admin "drain" (`EchoStreamAdmin.stop()`) in flight when `app.close()` arrives: close waits
 *   for the same stop, so it resolves only once the handler finished and its entry was acked;
 * - `app.close()` in the middle of a batch of dead letters with a slow `@DeadLetter` method: no
 *   dead-letter work starts once stopping, each letter whose method completed is acked before
 *   the connection closes, a restart copies nothing twice, and a method that outlives
 *   `shutdownTimeoutMs` is named in the warning.
 */
import 'reflect-metadata';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { DeadLetter, EchoStreamAdmin, StreamHandler, type DeadLetterMessage } from '../../lib';
import { RedisServer } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';
import {
  pendingCount,
  startLoop,
  stopLoopsAndServersAfterEach,
} from './support/in-process-loop';
import { CaptureLogger, createEchoStreamApp } from './support/nest-app';

stopLoopsAndServersAfterEach();

const RACE_STREAM = `race-stop-${process.pid}`;
const LETTERS_STREAM = `race-letters-${process.pid}`;

/** What the handlers of this file did, with times. */
const probe = {
  handlerStarted: [] as number[],
  handlerFinished: [] as number[],
  letterStarted: [] as Array<{ entryId: string; at: number }>,
  letterFinished: [] as Array<{ entryId: string; at: number }>,
  letterMs: 300,
  reset(): void {
    this.handlerStarted = [];
    this.handlerFinished = [];
    this.letterStarted = [];
    this.letterFinished = [];
  },
};

@Injectable()
class SlowHandler {
  @StreamHandler(RACE_STREAM, 'g', { blockMs: 200 })
  async handle(): Promise<void> {
    probe.handlerStarted.push(Date.now());
    await sleep(1000);
    probe.handlerFinished.push(Date.now());
  }
}

@Injectable()
class SlowDeadLetters {
  @StreamHandler(LETTERS_STREAM, 'g', { blockMs: 200 })
  handle(): void {}

  @DeadLetter(LETTERS_STREAM)
  async onDead(letter: DeadLetterMessage): Promise<void> {
    probe.letterStarted.push({ entryId: letter.entryId, at: Date.now() });
    await sleep(probe.letterMs);
    probe.letterFinished.push({ entryId: letter.entryId, at: Date.now() });
  }
}

@Module({ providers: [SlowHandler, SlowDeadLetters] })
class RaceModule {}

async function boot(
  url: string,
  shutdownTimeoutMs: number,
): Promise<{ app: INestApplication; logs: CaptureLogger }> {
  const logs = new CaptureLogger();
  const app = await createEchoStreamApp(
    { connection: url, consumerName: 'race-1', shutdownTimeoutMs },
    RaceModule,
    logs,
  );
  await app.init();
  return { app, logs };
}

async function pendingIds(redis: Redis, stream: string): Promise<string[]> {
  const rows = (await redis.xpending(stream, 'g', '-', '+', 1000)) as Array<[string]>;
  return rows.map((r) => r[0]);
}

/** `count` entries without a `data` field: each one is a `decode_error` dead letter. */
async function publishUndecodable(redis: Redis, stream: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push(String(await redis.xadd(stream, '*', 'id', `u-${i}`)));
  return ids;
}

beforeEach(() => probe.reset());

describe('a second stop() while one is in flight', () => {
  it('app.close() during EchoStreamAdmin.stop() waits for the same stop: the handler finished and was acked', async () => {
    const server = await RedisServer.start();
    const redis = server.client();
    const { app } = await boot(server.url, 5000);
    await redis.xadd(RACE_STREAM, '*', 'id', 'slow-1', 'data', '{}');
    await waitFor(() => probe.handlerStarted.length === 1, { message: 'the handler started' });

    const drain = app.get(EchoStreamAdmin).stop(); // an admin "drain" endpoint...
    await sleep(20);
    await app.close(); // ...and SIGTERM right after
    const closedAt = Date.now();
    const pendingAtClose = await pendingCount(redis, RACE_STREAM, 'g');
    await drain;

    expect(probe.handlerFinished).toHaveLength(1);
    expect(probe.handlerFinished[0]).toBeLessThanOrEqual(closedAt);
    expect(pendingAtClose).toBe(0);
  });

  it('StreamConsumer.stop() returns the same promise to every caller, settled only once the loop is down', async () => {
    const server = await RedisServer.start();
    const redis = server.client();
    let finished = 0;
    const loop = startLoop({
      url: server.url,
      stream: `race-engine-${process.pid}`,
      group: 'g',
      options: { blockMs: 200 },
      handle: async () => {
        await sleep(500);
        finished++;
      },
    });
    await redis.xadd(`race-engine-${process.pid}`, '*', 'id', 'e-1', 'data', '{}');
    await waitFor(() => loop.calls.some((c) => c.method === 'readGroup' && c.settledAt), {
      message: 'a read came back',
    });
    await sleep(100);
    const first = loop.consumer.stop(5000);
    const second = loop.consumer.stop(5000);
    expect(second).toBe(first);
    await second;
    expect(finished).toBe(1);
    expect(loop.consumer.snapshot().state).toBe('stopped');
    expect(await pendingCount(redis, `race-engine-${process.pid}`, 'g')).toBe(0);
    await loop.stop();
  });
});

describe('app.close() in the middle of a batch of dead letters', () => {
  it('starts no dead-letter work once stopping, acks each completed letter, and a restart copies nothing twice', async () => {
    const server = await RedisServer.start();
    const redis = server.client();
    probe.letterMs = 300;
    const ids = await publishUndecodable(redis, LETTERS_STREAM, 10);
    const first = await boot(server.url, 1000);
    await waitFor(() => probe.letterStarted.length >= 3, { message: 'three letters started' });
    const closeCalledAt = Date.now();
    await first.app.close();
    const pendingAtClose = await pendingIds(redis, LETTERS_STREAM);
    await sleep(probe.letterMs * 3); // anything still running after close shows up meanwhile

    const startedLate = probe.letterStarted.filter((s) => s.at >= closeCalledAt);
    expect(startedLate).toEqual([]);
    const completed = probe.letterFinished.map((f) => f.entryId);
    expect(completed.length).toBeGreaterThanOrEqual(3);
    expect(pendingAtClose.filter((id) => completed.includes(id))).toEqual([]);
    expect(pendingAtClose.length + completed.length).toBe(ids.length);

    // a restart under the same consumer name dead-letters the rest: one copy per entry in all
    probe.letterMs = 0;
    const second = await boot(server.url, 1000);
    await waitFor(async () => (await pendingCount(redis, LETTERS_STREAM, 'g')) === 0, {
      message: 'the restart dead-lettered the rest',
    });
    await second.app.close();
    const copies = (await redis.xrange(`${LETTERS_STREAM}:dlq`, '-', '+')).map(([, flat]) => {
      const at = flat.indexOf('dlq_entry_id');
      return flat[at + 1];
    });
    expect(copies.sort()).toEqual([...ids].sort());
  });

  it('a @DeadLetter method that outlives shutdownTimeoutMs is named in the warning', async () => {
    const server = await RedisServer.start();
    const redis = server.client();
    probe.letterMs = 2000;
    await publishUndecodable(redis, LETTERS_STREAM, 3);
    const { app, logs } = await boot(server.url, 300);
    await waitFor(() => probe.letterStarted.length === 1, { message: 'a letter started' });
    const inFlight = probe.letterStarted[0].entryId;
    await app.close();
    const warnings = logs.matching(/still running after 300 ms/);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(inFlight);
    expect(warnings[0]).toMatch(/@DeadLetter/);
    expect(logs.has(/a Redis command was still outstanding/)).toBe(false);
    expect(probe.letterStarted).toHaveLength(1);
    await sleep(probe.letterMs);
    expect(probe.letterStarted).toHaveLength(1);
  });
});
