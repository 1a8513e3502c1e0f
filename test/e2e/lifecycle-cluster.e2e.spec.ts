/**
 * The stream lifecycle (docs/operations.md, issue 14) on a real 3-master Redis Cluster: consumer cleanup,
 * retention with its lock and archive, and history, with streams owned by each master (the lock
 * key lives in another slot than its stream).
 */
import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import type { Cluster } from 'ioredis';
import {
  EchoStreamAdmin,
  StreamArchive,
  StreamHandler,
  type ArchivedEntry,
  type StreamMessage,
} from '../../lib';
import { bootApp, closeApps, fill } from '../support/lifecycle-apps';
import { RedisCluster } from '../support/redis-cluster';
import { stopAllRedisServers, type RedisServer } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

let cluster: RedisCluster;
let redis: Cluster;
let n = 0;

const OPTIONS = {
  blockMs: 100,
  claimIntervalMs: 100,
  minIdleMs: 2000,
  consumerCleanup: { idleMs: 1000 },
};

beforeAll(async () => {
  cluster = await RedisCluster.start();
  redis = cluster.client();
});
afterEach(closeApps);
afterAll(async () => {
  await cluster?.stop();
  await stopAllRedisServers();
});

/** A fresh key owned by `master`. */
async function keyOn(master: RedisServer, prefix: string): Promise<string> {
  for (let i = 0; i < 1000; i++) {
    const key = `${prefix}-${process.pid}-${++n}`;
    if ((await cluster.masterFor(key)) === master) return key;
  }
  throw new Error(`no key found on master ${master.port}`);
}

async function consumerNames(stream: string, group: string): Promise<string[]> {
  const reply = (await redis.xinfo('CONSUMERS', stream, group)) as unknown[][];
  return reply.map((flat) => String(flat[flat.indexOf('name') + 1])).sort();
}

it('cleans up idle consumers on every master, keeps the live one and one holding an entry until reclaimed', async () => {
  const streams = await Promise.all(cluster.servers.map((m, i) => keyOn(m, `cleanup${i}`)));
  const handled: string[] = [];
  for (const stream of streams) {
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    await redis.xgroup('CREATECONSUMER', stream, 'g', 'gone-1');
    await redis.xadd(stream, '*', 'id', `held-${stream}`, 'data', '{}');
    await redis.xreadgroup('GROUP', 'g', 'gone-2', 'COUNT', 1, 'STREAMS', stream, '>');
  }
  @Injectable()
  class Handlers {
    @StreamHandler(streams[0], 'g', OPTIONS)
    a(m: StreamMessage<unknown>): void {
      handled.push(m.id);
    }
    @StreamHandler(streams[1], 'g', OPTIONS)
    b(m: StreamMessage<unknown>): void {
      handled.push(m.id);
    }
    @StreamHandler(streams[2], 'g', OPTIONS)
    c(m: StreamMessage<unknown>): void {
      handled.push(m.id);
    }
  }
  await bootApp({ cluster: { nodes: cluster.nodes }, consumerName: 'live' }, [Handlers]);
  for (const stream of streams) {
    await waitFor(async () => !(await consumerNames(stream, 'g')).includes('gone-1'), {
      message: `gone-1 deleted on ${stream}`,
    });
  }
  // waited for together: a reclaim empties the dead consumer's PEL a few round trips before the
  // handler runs and acks, and a cleanup pass may delete it in between. An entry deleted with its
  // consumer would never be handled: the wait would time out
  const pendingOf = async (s: string): Promise<number> =>
    ((await redis.xpending(s, 'g')) as [number])[0];
  await waitFor(
    async () =>
      (await Promise.all(streams.map((s) => consumerNames(s, 'g')))).every(
        (names) => names.join() === 'live',
      ) &&
      handled.length === streams.length &&
      (await Promise.all(streams.map(pendingOf))).every((n) => n === 0),
    {
      message: 'only the live consumer left everywhere, every held entry acked',
      timeoutMs: 15_000,
    },
  );
  expect(handled.sort()).toEqual(streams.map((s) => `held-${s}`).sort());
}, 60_000);

it('retention trims each stream down to maxLen behind its lock, archiving first; history reads it back', async () => {
  const streams = await Promise.all(cluster.servers.map((m, i) => keyOn(m, `retain${i}`)));
  const archived = new Map<string, string[]>(streams.map((s) => [s, []]));
  const ids = new Map<string, string[]>();
  for (const stream of streams) ids.set(stream, await fill(redis, stream, 30));
  @Injectable()
  class Archives {
    @StreamArchive(streams[0])
    a(entries: ArchivedEntry[]): void {
      archived.get(streams[0])!.push(...entries.map((e) => e.entryId));
    }
    @StreamArchive(streams[1])
    b(entries: ArchivedEntry[]): void {
      archived.get(streams[1])!.push(...entries.map((e) => e.entryId));
    }
    @StreamArchive(streams[2])
    c(entries: ArchivedEntry[]): void {
      archived.get(streams[2])!.push(...entries.map((e) => e.entryId));
    }
  }
  const retention = streams.map((stream) => ({ stream, maxLen: 10 }));
  const options = { cluster: { nodes: cluster.nodes }, retention };
  const { app } = await bootApp({ ...options, consumerName: 'a' }, [Archives]);
  await bootApp({ ...options, consumerName: 'b' }, [Archives]);
  for (const stream of streams) {
    await waitFor(async () => (await redis.xlen(stream)) === 10, { message: `${stream} trimmed` });
  }
  await sleep(500);
  for (const stream of streams) {
    expect(archived.get(stream)).toEqual(ids.get(stream)!.slice(0, 20)); // once, in order
    const read: string[] = [];
    for await (const entry of app.get(EchoStreamAdmin).history(stream)) read.push(entry.entryId);
    expect(read).toEqual(ids.get(stream)!.slice(20));
  }
}, 60_000);
