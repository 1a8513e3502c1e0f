/**
 * Retention oracle (issue 14): producers write 50,000 entries while two groups consume them at
 * different speeds and two app instances (each its own connections, consumer names and lock
 * token, as two processes would be) run retention every 200 ms with `maxLen` 1,000 and an archive
 * method. Halfway through, one app shuts down and the other takes the lock over.
 *
 * Invariants checked:
 * - none trimmed unprocessed: when an entry reaches the archive (just before its trim), both
 *   groups have already handled it; and in the end both groups handled every entry;
 * - the stream ends short: exactly the newest 1,000 entries are left;
 * - the archive received every trimmed entry exactly once across both apps, oldest first.
 */
import 'reflect-metadata';
import { Injectable, type Type } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { StreamArchive, StreamHandler, type ArchivedEntry, type StreamMessage } from '../../lib';
import { bootApp, closeApps, fill } from '../support/lifecycle-apps';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

const STREAM = 'retention-oracle';
const TOTAL = 50_000;
const MAX_LEN = 1000;

let server: RedisServer;
let redis: Redis;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterAll(async () => {
  await closeApps();
  await stopAllRedisServers();
});

const handled = { fast: new Set<string>(), slow: new Set<string>() };
const archived: Array<{ app: string; id: string; entryId: string }> = [];
const unprocessedAtArchive: string[] = [];

function providersOf(app: string): Type<unknown>[] {
  @Injectable()
  class Consumers {
    @StreamHandler(STREAM, 'fast', { blockMs: 100, batchSize: 200 })
    fast(message: StreamMessage<unknown>): void {
      handled.fast.add(message.id);
    }

    @StreamHandler(STREAM, 'slow', { blockMs: 100, batchSize: 50 })
    async slow(message: StreamMessage<{ i: number }>): Promise<void> {
      if (message.payload.i % 100 === 0) await sleep(3);
      handled.slow.add(message.id);
    }
  }
  @Injectable()
  class Archive {
    @StreamArchive(STREAM)
    fold(entries: ArchivedEntry[]): void {
      for (const entry of entries) {
        if (!handled.fast.has(entry.id) || !handled.slow.has(entry.id)) {
          unprocessedAtArchive.push(entry.id);
        }
        archived.push({ app, id: entry.id, entryId: entry.entryId });
      }
    }
  }
  return [Consumers, Archive];
}

it('every entry is handled by both groups, the stream ends at maxLen, each trimmed entry archived once', async () => {
  const retention = [{ stream: STREAM, maxLen: MAX_LEN }];
  const first = await bootApp(
    { connection: server.url, consumerName: 'app-a', retention },
    providersOf('a'),
  );
  const second = await bootApp(
    { connection: server.url, consumerName: 'app-b', retention },
    providersOf('b'),
  );

  const entryIds: string[] = [];
  for (let from = 0; from < TOTAL; from += 1000) {
    entryIds.push(...(await fill(redis, STREAM, 1000, from)));
    await sleep(20);
    if (from === TOTAL / 2) {
      // halfway, the app holding the lock shuts down: the other one takes retention over (and
      // its groups' work)
      await waitFor(() => archived.length > 0, { message: 'a first archive call' });
      await (archived[archived.length - 1].app === 'a' ? first : second).app.close();
    }
  }
  await waitFor(() => handled.fast.size === TOTAL && handled.slow.size === TOTAL, {
    timeoutMs: 120_000,
    intervalMs: 200,
    message: 'both groups handled every entry',
  });
  await waitFor(async () => (await redis.xlen(STREAM)) === MAX_LEN, {
    timeoutMs: 20_000,
    message: 'the stream trimmed to maxLen',
  });
  await sleep(600); // a few more intervals: nothing more may go
  const left = (await redis.xrange(STREAM, '-', '+')).map(([id]) => id);
  expect(left).toEqual(entryIds.slice(TOTAL - MAX_LEN));
  for (const group of ['fast', 'slow']) {
    const [pending] = (await redis.xpending(STREAM, group)) as [number];
    expect(pending).toBe(0);
  }

  expect(unprocessedAtArchive).toEqual([]);
  const archivedIds = archived.map((a) => a.entryId);
  expect(new Set(archivedIds).size).toBe(archivedIds.length); // no duplicates
  expect(archivedIds).toEqual(entryIds.slice(0, TOTAL - MAX_LEN)); // every trimmed one, in order
  // both apps archived (the lock moved when the first shut down)
  const byA = archived.filter((x) => x.app === 'a').length;
  expect(byA).toBeGreaterThan(0);
  expect(archived.length - byA).toBeGreaterThan(0);
}, 180_000);
