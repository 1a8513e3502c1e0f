/**
 * Shutdown racing other work (issue 10, defects 2 and 3), through the Nest glue:
 *
 * - an admin "drain" (`EchoStreamAdmin.stop()`) in flight when `app.close()` arrives: close waits
 *   for the same stop, so it resolves only once the handler finished and its entry was acked;
 * - `app.close()` in the middle of a batch of dead letters with a slow `@DeadLetter` method: no
 *   dead-letter work starts once stopping, each letter whose method completed is acked before
 *   the connection closes, a restart copies nothing twice, and a method that outlives
 *   `shutdownTimeoutMs` is named in the warning;
 * - `app.close()` while a handler outlives `shutdownTimeoutMs` and other entries wait for their
 *   retry (issue 11): the waiting retries are released to peers all the same, due ones with an
 *   idle time of `minIdleMs` (a peer's next sweep takes them) and their delivery counts kept (the
 *   failed attempt was a real delivery: the peer's attempt is 2).
 */
import 'reflect-metadata';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import type { Redis } from 'ioredis';
import {
  ConsumerStats,
  DeadLetter,
  EchoStreamAdmin,
  StreamHandler,
  type DeadLetterMessage,
  type StreamMessage,
} from '../../lib';
import { RedisServer } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';
import { pendingCount, startLoop, stopLoopsAndServersAfterEach } from './support/in-process-loop';
import { CaptureLogger, createEchoStreamApp } from './support/nest-app';

stopLoopsAndServersAfterEach();

const RACE_STREAM = `race-stop-${process.pid}`;
const LETTERS_STREAM = `race-letters-${process.pid}`;
const RETRIES_STREAM = `race-retries-${process.pid}`;
/** The retry handler's crash detection: long, so only a release can bring an entry back soon. */
const RETRIES_MIN_IDLE_MS = 20_000;
const RETRY_DELAY_MS = 400;

/** What the handlers of this file did, with times. */
const probe = {
  handlerStarted: [] as number[],
  handlerFinished: [] as number[],
  letterStarted: [] as Array<{ entryId: string; at: number }>,
  letterFinished: [] as Array<{ entryId: string; at: number }>,
  letterMs: 300,
  /** Called as each letter's method starts, with how many have started so far. */
  onLetterStarted: undefined as ((count: number) => void) | undefined,
  reset(): void {
    this.handlerStarted = [];
    this.handlerFinished = [];
    this.letterStarted = [];
    this.letterFinished = [];
    this.onLetterStarted = undefined;
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
    probe.onLetterStarted?.(probe.letterStarted.length);
    await sleep(probe.letterMs);
    probe.letterFinished.push({ entryId: letter.entryId, at: Date.now() });
  }
}

@Module({ providers: [SlowHandler, SlowDeadLetters] })
class RaceModule {}

/** What the retry handler saw, and the gate its 'hang' entry waits on. */
const retryProbe = {
  calls: [] as Array<{ id: string; entryId: string; consumer: string; attempts: number }>,
  unhang: (): void => undefined,
};

@Injectable()
class RetriesAndAHang {
  /** 'hang' ignores the abort signal until the test lets it go; every other entry fails once. */
  @StreamHandler(RETRIES_STREAM, 'g', {
    blockMs: 200,
    minIdleMs: RETRIES_MIN_IDLE_MS,
    claimIntervalMs: 50,
    retry: { type: 'fixed', delayMs: RETRY_DELAY_MS },
  })
  async handle(m: StreamMessage<unknown>): Promise<void> {
    const { id, entryId, consumer, attempts } = m;
    retryProbe.calls.push({ id, entryId, consumer, attempts });
    if (id === 'hang') await new Promise<void>((resolve) => (retryProbe.unhang = resolve));
    else if (attempts === 1) throw new Error('the first attempt fails');
  }
}

@Module({ providers: [RetriesAndAHang] })
class RetriesModule {}

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

async function bootRetries(
  url: string,
  consumerName: string,
): Promise<{ app: INestApplication; logs: CaptureLogger }> {
  const logs = new CaptureLogger();
  const app = await createEchoStreamApp(
    { connection: url, consumerName, shutdownTimeoutMs: 800 },
    RetriesModule,
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
    // the close comes while the third letter's method runs, never while a copy is in flight (a
    // letter whose copy went out before the stop has started down the path: its method runs)
    const thirdStarted = new Promise<void>((resolve) => {
      probe.onLetterStarted = (count) => count === 3 && resolve();
    });
    const first = await boot(server.url, 1000);
    await thirdStarted;
    await first.app.close();
    const pendingAtClose = await pendingIds(redis, LETTERS_STREAM);
    await sleep(probe.letterMs * 3); // anything still running after close shows up meanwhile

    const startedLate = probe.letterStarted.slice(3);
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

describe('app.close() while a handler outlives shutdownTimeoutMs and retries wait', () => {
  it.each([
    ['waiting in the retry scheduler (failed in an earlier read)', false],
    ['failed earlier in the batch the hung handler is in', true],
  ])(
    'retries %s are released to peers: idle >= minIdleMs, delivery count kept, a peer handles them at once',
    async (_, sameBatch) => {
      retryProbe.calls = [];
      const server = await RedisServer.start();
      const redis = server.client();
      const first = await bootRetries(server.url, 'first');
      const publish = async (ids: string[]): Promise<string[]> => {
        const multi = redis.multi(); // one read takes them all
        for (const id of ids) multi.xadd(RETRIES_STREAM, '*', 'id', id, 'data', '{}');
        return ((await multi.exec()) ?? []).map(([, entryId]) => String(entryId));
      };
      const failing = ['f0', 'f1', 'f2'];
      let failingIds: string[];
      let hangId: string;
      if (sameBatch) {
        // one read: f0..f2 fail (their retries are scheduled only once the batch is through),
        // then 'hang' hangs
        const ids = await publish([...failing, 'hang']);
        failingIds = ids.slice(0, 3);
        hangId = ids[3];
      } else {
        failingIds = await publish(failing);
        const stats = first.app.get(ConsumerStats);
        await waitFor(() => stats.get(RETRIES_STREAM, 'g')?.retrying === 3, {
          message: 'three retries wait',
        });
        [hangId] = await publish(['hang']);
      }
      await waitFor(() => retryProbe.calls.some((c) => c.id === 'hang'), {
        message: 'the hang started',
      });

      await first.app.close(); // gives up on 'hang' after 800 ms
      expect(first.logs.has(new RegExp(`still running after 800 ms \\(entries ${hangId}\\)`))).toBe(
        true,
      );
      expect(first.logs.has(/released 3 waiting retries to peers/)).toBe(true);
      const rows = (await redis.xpending(RETRIES_STREAM, 'g', '-', '+', 10)) as Array<
        [string, string, number, number]
      >;
      const byId = new Map(
        rows.map(([entryId, owner, idle, deliveries]) => [entryId, { owner, idle, deliveries }]),
      );
      // due by now (400 ms after their failure): a peer's sweep (idle >= minIdleMs) may take them
      for (const entryId of failingIds) {
        expect(byId.get(entryId)).toEqual({
          owner: 'first',
          idle: expect.any(Number),
          deliveries: 1, // kept: not reset to 0 as for an entry that never reached a handler
        });
        expect(byId.get(entryId)!.idle).toBeGreaterThanOrEqual(RETRIES_MIN_IDLE_MS);
      }
      expect(byId.get(hangId)).toMatchObject({ owner: 'first', deliveries: 1 }); // still in its handler

      // a peer takes them on its first sweep, long before minIdleMs would have freed them
      const peerStartedAt = Date.now();
      const peer = await bootRetries(server.url, 'peer');
      await waitFor(() => retryProbe.calls.filter((c) => c.consumer === 'peer').length === 3, {
        timeoutMs: 5000,
        message: 'the peer handles the three retries',
      });
      expect(Date.now() - peerStartedAt).toBeLessThan(RETRIES_MIN_IDLE_MS / 2);
      const byPeer = retryProbe.calls.filter((c) => c.consumer === 'peer');
      expect(byPeer.map((c) => [c.entryId, c.attempts]).sort()).toEqual(
        failingIds.map((entryId) => [entryId, 2]).sort(),
      );
      await waitFor(async () => (await pendingIds(redis, RETRIES_STREAM)).join() === hangId, {
        message: 'only the hung entry stays pending',
      });
      retryProbe.unhang();
      await peer.app.close();
    },
  );
});
