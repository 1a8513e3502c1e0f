/**
 * Consumer cleanup (docs/operations.md, issue 14) on a real Redis: which consumers XINFO CONSUMERS still
 * lists after the cleanup ran, and that no entry went missing from the group's PEL on the way.
 */
import 'reflect-metadata';
import { Injectable, type Type } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { StreamHandler, type StreamHandlerOptions, type StreamMessage } from '../../lib';
import { bootApp, closeApps } from '../support/lifecycle-apps';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

let server: RedisServer;
let redis: Redis;
let seq = 0;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterEach(closeApps);
afterAll(async () => {
  await stopAllRedisServers();
});

async function consumers(stream: string, group: string): Promise<Map<string, number>> {
  const reply = (await redis.xinfo('CONSUMERS', stream, group)) as unknown[][];
  const out = new Map<string, number>();
  for (const flat of reply) {
    const map = new Map<string, unknown>();
    for (let i = 0; i + 1 < flat.length; i += 2) map.set(String(flat[i]), flat[i + 1]);
    out.set(String(map.get('name')), Number(map.get('pending')));
  }
  return out;
}

function handlerFor(
  stream: string,
  group: string,
  handled: string[],
  options: Partial<StreamHandlerOptions>,
): Type<unknown> {
  @Injectable()
  class Handler {
    @StreamHandler(stream, group, { blockMs: 100, claimIntervalMs: 100, ...options })
    handle(message: StreamMessage<unknown>): void {
      handled.push(message.id);
    }
  }
  return Handler;
}

it('deletes idle consumers with nothing pending; keeps one holding an entry until a reclaim empties it; never a live one', async () => {
  const stream = `cleanup-${++seq}`;
  await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
  await redis.xadd(stream, '*', 'id', 'held', 'data', '{}');
  await redis.xgroup('CREATECONSUMER', stream, 'g', 'gone-1');
  // gone-2 read the entry and died with it pending
  await redis.xreadgroup('GROUP', 'g', 'gone-2', 'COUNT', 1, 'STREAMS', stream, '>');
  const handled: string[] = [];
  const options = { minIdleMs: 5000, consumerCleanup: { idleMs: 1000 } };
  const live = await bootApp({ connection: server.url, consumerName: 'live' }, [
    handlerFor(stream, 'g', handled, options),
  ]);
  // a live peer: another process of the same app (same options), parked on its read meanwhile
  const peer = await bootApp({ connection: server.url, consumerName: 'peer' }, [
    handlerFor(stream, 'g', handled, options),
  ]);
  const afterFirst = (await waitFor(
    async () => {
      const now = await consumers(stream, 'g');
      return !now.has('gone-1') && now;
    },
    { message: 'gone-1 deleted' },
  )) as Map<string, number>;
  // gone-2 still holds its entry (not idle for minIdleMs yet): it must still be there
  expect(afterFirst.get('gone-2')).toBe(1);
  // (Nest's static logger goes to the app created last); the line follows the delete's reply,
  // which the app may read after this test's XINFO (two connections): waited for, not assumed
  await waitFor(
    () =>
      [...live.logger.lines, ...peer.logger.lines].some((l) =>
        /deleted consumer 'gone-1' \(idle \d+ s, no pending entries\)/.test(l),
      ),
    { message: "the cleanup's line for gone-1" },
  );

  // waited for together: the reclaim empties gone-2's PEL a few round trips before the handler
  // runs and the XACK goes, and a cleanup pass may delete gone-2 in between. Had gone-2 been
  // deleted with its entry, the entry would have left the PEL unhandled: the wait times out
  await waitFor(
    async () =>
      !(await consumers(stream, 'g')).has('gone-2') &&
      handled.join() === 'held' &&
      ((await redis.xpending(stream, 'g')) as [number])[0] === 0,
    { message: 'gone-2 deleted after the reclaim, its entry handled and acked', timeoutMs: 15_000 },
  );
  expect(handled).toEqual(['held']);
  await sleep(1200); // two more cleanup passes
  const last = await consumers(stream, 'g');
  expect([...last.keys()].sort()).toEqual(['live', 'peer']);
});

it('never deletes this process own consumer, even idle (autoStart: false); consumerCleanup: false keeps all', async () => {
  const stream = `cleanup-${++seq}`;
  await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
  await redis.xgroup('CREATE', stream, 'kept', '0');
  for (const name of ['self', 'stale']) {
    await redis.xgroup('CREATECONSUMER', stream, 'g', name);
    await redis.xgroup('CREATECONSUMER', stream, 'kept', name);
  }
  const options = { consumerCleanup: { idleMs: 1000 } };
  @Injectable()
  class Handlers {
    @StreamHandler(stream, 'g', { blockMs: 100, ...options })
    g(): void {}

    @StreamHandler(stream, 'kept', { blockMs: 100, consumerCleanup: false })
    kept(): void {}
  }
  await bootApp({ connection: server.url, consumerName: 'self', autoStart: false }, [Handlers]);
  await waitFor(async () => !(await consumers(stream, 'g')).has('stale'), {
    message: 'stale deleted',
  });
  await sleep(700);
  expect([...(await consumers(stream, 'g')).keys()]).toEqual(['self']);
  expect([...(await consumers(stream, 'kept')).keys()].sort()).toEqual(['self', 'stale']);
});

it('rejects a bad consumerCleanup with a clear error', async () => {
  const stream = `cleanup-${++seq}`;
  expect(() => handlerFor(stream, 'g', [], { consumerCleanup: { idleMs: 0 } })).toThrow(
    /option 'consumerCleanup.idleMs' must be an integer >= 1000, got number 0/,
  );
  expect(() =>
    handlerFor(stream, 'g', [], { consumerCleanup: { idleMs: 5000, idle: 1 } as never }),
  ).toThrow(/consumerCleanup: unknown option 'idle'/);
  expect(() => handlerFor(stream, 'g', [], { consumerCleanup: { idleMs: 999 } })).toThrow(
    /option 'consumerCleanup.idleMs' must be an integer >= 1000, got number 999/,
  );
  expect(() => handlerFor(stream, 'g', [], { consumerCleanup: true as never })).toThrow(
    /option 'consumerCleanup' must be \{ idleMs \} or false, got boolean true/,
  );
});
