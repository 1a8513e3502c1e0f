/**
 * A partitioned stream's lists on the dashboard by its own name (docs/operations.md "Dashboard",
 * docs/partitions.md "Visible"), against a real redis-server: the group's PEL and the stream's
 * entries are its partitions' merged in entry-id order (the PEL oldest first, the entries newest
 * first), each row with its partition; an id held by two partitions is two rows, in partition
 * order, and the paging cursor `<entry id>@<partition>` goes through them without a gap or a
 * repeat; a hostile or wrong cursor is a 400 that does not echo it; the overview's partition rows
 * carry the figures of this app's loop of each partition.
 */
import 'reflect-metadata';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import {
  ConsumerStats,
  EchoStreamDashboardModule,
  EchoStreamModule,
  StreamHandler,
  StreamProducer,
  type OverviewView,
  type PendingPageView,
  type StreamMessage,
  type TailPageView,
} from '../../lib';
import { partitionCountKeyOf } from '../../lib/redis/package-keys';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

let server: RedisServer;
let redis: Redis;
const apps: INestApplication[] = [];

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});
afterAll(async () => {
  redis.disconnect();
  await stopAllRedisServers();
});

/** A listening app with the dashboard showing `streams`, and `providers`; `base` its origin. */
async function start(streams: string[], providers: Array<new (...args: never[]) => unknown> = []) {
  @Module({
    imports: [
      EchoStreamModule.forRoot({ connection: server.url, consumerName: 'here' }),
      EchoStreamDashboardModule.register({ streams }),
    ],
    providers,
  })
  class AppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  apps.push(app);
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  return { app, base: `http://127.0.0.1:${port}/echo-stream/api` };
}

/**
 * A partitioned stream of 3 partitions written by hand (ids chosen): `1000-0` is in partitions
 * 0 and 1; group billing read all of it (c1 partitions 0 and 2, c2 partition 1).
 */
async function seed(stream: string): Promise<void> {
  await redis.set(partitionCountKeyOf(stream), '3');
  const ids: Record<number, string[]> = {
    0: ['1000-0', '1002-0', '1005-0'],
    1: ['1000-0', '1003-0'],
    2: ['1001-0', '1004-0'],
  };
  for (const [p, list] of Object.entries(ids)) {
    const key = `${stream}:p:${p}`;
    for (const id of list) await redis.xadd(key, id, 'pkey', `k${p}`, 'n', `${id}@${p}`);
    await redis.xgroup('CREATE', key, 'billing', '0');
    await redis.xreadgroup('GROUP', 'billing', p === '1' ? 'c2' : 'c1', 'STREAMS', key, '>');
  }
}

const rows = (entries: Array<{ entryId: string; partition?: number }>) =>
  entries.map((e) => `${e.entryId}@${e.partition}`);

describe("a partitioned stream's lists by its own name", () => {
  it('the PEL: every partition merged oldest first, each row with its partition and body; paged by <id>@<partition>', async () => {
    const stream = `orders-${process.pid}`;
    await seed(stream);
    const { base } = await start([stream]);
    const url = (query: string) => `${base}/streams/${stream}/groups/billing/pending${query}`;
    const all = (await (await fetch(url(''))).json()) as PendingPageView;
    expect(all.pending).toBe(7);
    expect(rows(all.entries)).toEqual([
      '1000-0@0',
      '1000-0@1',
      '1001-0@2',
      '1002-0@0',
      '1003-0@1',
      '1004-0@2',
      '1005-0@0',
    ]);
    expect(all.entries.map((e) => [e.consumer, e.deliveries, e.preview])).toEqual(
      all.entries.map((e) => [
        e.partition === 1 ? 'c2' : 'c1',
        1,
        `pkey=k${e.partition} n=${e.entryId}@${e.partition}`,
      ]),
    );
    expect(all.next).toBeNull();

    // pages of 1, 2 and 3 walk the same list, the tie at 1000-0 included
    for (const count of [1, 2, 3]) {
      const walked: string[] = [];
      let after: string | null = null;
      for (let pages = 0; pages < 10; pages++) {
        const query: string = `?count=${count}${after ? `&after=${encodeURIComponent(after)}` : ''}`;
        const page = (await (await fetch(url(query))).json()) as PendingPageView;
        walked.push(...rows(page.entries));
        after = page.next;
        if (after === null) break;
        expect(after).toBe(walked.at(-1));
      }
      expect(walked).toEqual(rows(all.entries));
    }
    const unknown = await fetch(`${base}/streams/${stream}/groups/nope/pending`);
    expect(unknown.status).toBe(404);
  });

  it('the entries: every partition merged newest first, each with its partition; length summed', async () => {
    const stream = `tail-${process.pid}`;
    await seed(stream);
    const { base } = await start([stream]);
    const url = (query: string) => `${base}/streams/${stream}/entries${query}`;
    const first = (await (await fetch(url('?count=6'))).json()) as TailPageView;
    expect(first.length).toBe(7);
    expect(rows(first.entries)).toEqual([
      '1005-0@0',
      '1004-0@2',
      '1003-0@1',
      '1002-0@0',
      '1001-0@2',
      '1000-0@1',
    ]);
    expect(first.entries[0].preview).toBe('pkey=k0 n=1005-0@0');
    expect(first.next).toBe('1000-0@1');
    const rest = (await (await fetch(url(`?count=6&after=${first.next}`))).json()) as TailPageView;
    expect([rows(rest.entries), rest.next]).toEqual([['1000-0@0'], null]);
  });

  it('a cursor that does not fit the stream is a 400 that does not echo it', async () => {
    const stream = `cursor-${process.pid}`;
    await seed(stream);
    const plain = `plain-${process.pid}`;
    await redis.xadd(plain, '1-0', 'a', 'b');
    await redis.xgroup('CREATE', plain, 'billing', '0');
    const { base } = await start([stream, plain]);
    const pending = `${base}/streams/${stream}/groups/billing/pending?after=`;
    const entries = `${base}/streams/${stream}/entries?after=`;
    const bad = [
      `${pending}1000-0`, // which partition?
      `${pending}1000-0@3`, // no partition 3
      `${entries}1000-0@99999`,
      `${entries}1000-0@-1`,
      `${entries}${encodeURIComponent('1000-0@1\u202e<b>')}`,
      `${pending}18446744073709551616-0@1`, // beyond 64 bits
      `${base}/streams/${plain}/entries?after=1-0@0`, // a plain stream has no partitions
      `${base}/streams/${stream}/dead-letters?after=1-0@0`, // one dead-letter stream
    ];
    for (const at of bad) {
      const res = await fetch(at);
      const body = (await res.json()) as { message: string };
      expect([at, res.status]).toEqual([at, 400]);
      expect(body.message).toMatch(/^after/);
      expect(body.message).not.toMatch(/<b>|\u202e|99999|1000-0/);
    }
    expect((await fetch(`${base}/streams/${plain}/entries?after=1-0`)).status).toBe(200);
  });

  it("the overview's partition rows carry this app's loop figures of each partition", async () => {
    const stream = `figures-${process.pid}`;
    @Injectable()
    class Handler {
      @StreamHandler(stream, 'billing', { partitions: 2, blockMs: 100, claimIntervalMs: 100 })
      handle(m: StreamMessage<{ n: number }>): void {
        if (m.payload.n < 0) throw new Error('refused');
      }
    }
    const { app, base } = await start([], [Handler]);
    const producer = app.get(StreamProducer);
    // k0 -> partition 1 and k4 -> partition 0 (crc32 mod 2); one failure on partition 0
    for (let n = 0; n < 6; n++) await producer.publish(stream, { n }, { key: 'k0', partitions: 2 });
    await producer.publish(stream, { n: -1 }, { key: 'k4', partitions: 2 });
    const owned = () => app.get(ConsumerStats).get(stream, 'billing')?.partitions ?? [];
    await waitFor(
      () =>
        owned().reduce((sum, p) => sum + p.totalAcked, 0) === 6 &&
        owned().some((p) => p.totalErrors > 0),
      { timeoutMs: 10_000, message: '6 acked, one failure' },
    );
    expect(owned().map((p) => [p.partition, p.state, p.totalAcked, p.totalErrors > 0])).toEqual([
      [0, 'running', 0, true],
      [1, 'running', 6, false],
    ]);
    expect(owned()[1].tpsIn).toBeGreaterThan(0);
    const overview = (await (await fetch(`${base}/overview`)).json()) as OverviewView;
    const group = overview.streams.find((s) => s.stream === stream)!.groups[0];
    expect(group.partitions!.map((p) => [p.partition, p.owner, p.state])).toEqual([
      [0, 'here', 'running'],
      [1, 'here', 'running'],
    ]);
    expect(group.partitions![1].tpsIn).toBeGreaterThan(0);
    expect(group.partitions![1].tpsOut).toBeGreaterThan(0);
  });
});
