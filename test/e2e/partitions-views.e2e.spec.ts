/**
 * A partitioned stream is one stream in every view (docs/partitions.md "Visible"), on a real
 * redis-server: `ConsumerStats.inspect`, `echo-stream inspect` and the dashboard's overview sum
 * its partitions (length, pending, lag) with a per-partition breakdown and list every group on
 * any partition; `EchoStreamAdmin.history` and `echo-stream history` read its partitions merged
 * in entry-id order; retention (with its archive) trims it by its name as one stream, each
 * partition below its own floor; consumer cleanup works on it by its name, never deleting a
 * partition's lease holder, a consumer holding entries, or this process's own.
 */
import 'reflect-metadata';
import { Injectable, Module, type INestApplication, type Type } from '@nestjs/common';
import type { Redis } from 'ioredis';
import {
  ConsumerStats,
  crc32,
  EchoStreamAdmin,
  EchoStreamDashboardModule,
  StreamArchive,
  StreamHandler,
  StreamProducer,
  type ArchivedEntry,
  type HistoryEntry,
  type StreamHandlerOptions,
  type StreamMessage,
} from '../../lib';
import { DashboardService } from '../../lib/dashboard/dashboard.service';
import { leaseKeyOf, partitionCountKeyOf } from '../../lib/redis/package-keys';
import { compareEntryIds } from '../../lib/codec/entry-id';
import { CaptureLogger, createEchoStreamApp } from '../faults/support/nest-app';
import { runCliProcess } from '../support/cli-process';
import { bootApp, closeApps } from '../support/lifecycle-apps';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

let server: RedisServer;
let redis: Redis;
let seq = 0;
const fresh = (what: string) => `pv-${what}-${process.pid}-${++seq}`;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
/** Apps with the dashboard (not booted by bootApp, which takes providers only). */
const dashboards: INestApplication[] = [];
afterEach(async () => {
  await closeApps();
  await Promise.all(dashboards.splice(0).map((app) => app.close()));
});
afterAll(async () => {
  redis.disconnect();
  await stopAllRedisServers();
});

const cli = (...args: string[]) => runCliProcess(['--url', server.url, ...args]);

/** A handler class on `stream`/g that records payloads; `hold(payload)` may keep one waiting. */
function handlerOf(
  stream: string,
  options: Partial<StreamHandlerOptions>,
  handled: Array<{ seq: number; partition: number | undefined }>,
  hold: (payload: { seq: number; hold?: boolean }) => Promise<void> = async () => undefined,
): Type<unknown> {
  @Injectable()
  class Handler {
    @StreamHandler(stream, 'g', { blockMs: 100, claimIntervalMs: 100, ...options })
    async handle(m: StreamMessage<{ seq: number; hold?: boolean }>): Promise<void> {
      await hold(m.payload);
      handled.push({ seq: m.payload.seq, partition: m.partition });
    }
  }
  return Handler;
}

describe('one stream in every view', () => {
  it('inspect, the CLI and the dashboard sum the partitions, with a row per partition, for every group', async () => {
    const stream = fresh('sum');
    const P = 3;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started = 0;
    const handled: Array<{ seq: number; partition: number | undefined }> = [];
    const Handler = handlerOf(stream, { partitions: P, concurrency: 4 }, handled, (p) => {
      if (!p.hold) return Promise.resolve();
      started++;
      return gate;
    });
    @Module({ imports: [EchoStreamDashboardModule.register()], providers: [Handler] })
    class WithDashboard {}
    const app = await createEchoStreamApp(
      { connection: server.url, consumerName: 'a' },
      WithDashboard,
      new CaptureLogger(),
    );
    dashboards.push(app);
    await app.init();
    const stats = app.get(ConsumerStats);
    const producer = app.get(StreamProducer);
    const keys = Array.from({ length: 12 }, (_, i) => `k${i}`);
    // the last of their partitions (1 and 2): a partition reads on once its batch in hand settled
    const held = new Set(['k7', 'k11']);
    for (const [i, key] of keys.entries())
      await producer.publish(stream, { seq: i, hold: held.has(key) }, { key, partitions: P });
    await waitFor(() => handled.length === 10 && started === 2, {
      timeoutMs: 10_000,
      message: '10 handled, 2 in hand',
    });
    // another group on every partition that never read: its lag is every entry
    for (let i = 0; i < P; i++) await redis.xgroup('CREATE', `${stream}:p:${i}`, 'audit', '0');

    const partitionOf = (key: string) => crc32(key) % P;
    expect([...held].map(partitionOf)).toEqual([1, 2]);
    const lengths = Array.from(
      { length: P },
      (_, i) => keys.filter((k) => partitionOf(k) === i).length,
    );
    // what the PELs hold (the held entries, and the entries of their batches, acked once it
    // settles): every view must show the same
    const pendingOf = await Promise.all(
      Array.from({ length: P }, async (_, i) => {
        const [count] = (await redis.xpending(`${stream}:p:${i}`, 'g')) as [number];
        return Number(count);
      }),
    );
    const pending = pendingOf.reduce((sum, n) => sum + n, 0);
    expect(pendingOf[1]).toBeGreaterThanOrEqual(1);
    expect(pendingOf[2]).toBeGreaterThanOrEqual(1);
    const g = await stats.inspect(stream, 'g');
    expect(g).toMatchObject({ pending, lag: 0, deadLetters: 0 });
    expect(g.consumers).toEqual([{ name: 'a', pending, idleMs: expect.any(Number) }]);
    expect(g.oldestPendingMs).toEqual(expect.any(Number));
    expect(g.partitions!.map((p) => [p.partition, p.owner, p.length, p.pending, p.lag])).toEqual(
      lengths.map((length, i) => [i, 'a', length, pendingOf[i], 0]),
    );
    const audit = await stats.inspect(stream, 'audit');
    expect(audit).toMatchObject({ pending: 0, lag: 12, consumers: [] });
    expect(audit.partitions!.map((p) => p.lag)).toEqual(lengths);

    const json = JSON.parse((await cli('--json', 'inspect', stream)).stdout) as {
      length: number;
      groups: Array<{ group: string; pending: number; lag: number; partitions: unknown[] }>;
    };
    expect(json.length).toBe(12);
    expect(json.groups.map((x) => [x.group, x.pending, x.lag, x.partitions.length])).toEqual([
      ['audit', 0, 12, P],
      ['g', pending, 0, P],
    ]);
    const text = (await cli('inspect', stream)).stdout;
    expect(text).toMatch(
      /partitioned, 3 partition\(s\), 12 entries, 2 group\(s\), 0 dead letter\(s\)/,
    );
    expect(text).toContain(`group g: 1 owner(s), pending ${pending}, lag 0, oldest pending `);
    expect(text).toMatch(/group audit: 0 owner\(s\), pending 0, lag 12/);

    const row = (await app.get(DashboardService).overview()).streams.find(
      (s) => s.stream === stream,
    )!;
    expect(row).toMatchObject({ length: 12, deadLetters: 0 });
    expect(row.groups.map((x) => [x.group, x.state, x.pending, x.lag])).toEqual([
      ['audit', null, 0, 12],
      ['g', 'running', pending, 0],
    ]);
    expect(row.groups[1].partitions!.map((p) => [p.length, p.pending])).toEqual(
      lengths.map((length, i) => [length, pendingOf[i]]),
    );
    release();
    await waitFor(async () => (await stats.inspect(stream, 'g')).pending === 0, {
      message: 'the held entries acked',
    });
  });

  it('history reads the partitions merged in entry-id order, each entry with its partition', async () => {
    const stream = fresh('history');
    const P = 3;
    await redis.set(partitionCountKeyOf(stream), String(P));
    const written: Array<{ id: string; partition: number }> = [];
    const pipeline = redis.pipeline();
    for (let i = 1; i <= 1200; i++) {
      // interleaved over the partitions, and every 10th id in two partitions
      const parts = i % 10 === 0 ? [i % P, (i + 1) % P] : [(i * 7) % P];
      for (const partition of parts) {
        const id = `${1_800_000_000_000 + i}-0`;
        pipeline.xadd(
          `${stream}:p:${partition}`,
          id,
          'id',
          `e${i}`,
          'data',
          JSON.stringify({ i }),
          'pkey',
          `k${i}`,
        );
        written.push({ id, partition });
      }
    }
    await pipeline.exec();
    written.sort((a, b) => compareEntryIds(a.id, b.id) || a.partition - b.partition);
    const { app } = await bootApp({ connection: server.url });
    const admin = app.get(EchoStreamAdmin);
    const read = async (options = {}) => {
      const out: HistoryEntry<{ i: number }>[] = [];
      for await (const entry of admin.history<{ i: number }>(stream, options)) out.push(entry);
      return out;
    };
    const all = await read();
    expect(all.map((e) => ({ id: e.entryId, partition: e.partition }))).toEqual(written);
    expect(all[0]).toMatchObject({ id: 'e1', payload: { i: 1 }, fields: { pkey: 'k1' } });
    // bounds (inclusive) and count, as for a plain stream
    const window = await read({
      from: `${1_800_000_000_100}`,
      to: `${1_800_000_000_110}`,
      count: 5,
    });
    expect(window.map((e) => [e.entryId, e.partition])).toEqual(
      written
        .filter((w) => compareEntryIds(w.id, `${1_800_000_000_100}-0`) >= 0)
        .slice(0, 5)
        .map((w) => [w.id, w.partition]),
    );
    const json = await cli('--json', 'history', stream, '--from', '0', '--count', '1200');
    expect(json.stderr).toBe('');
    const lines = JSON.parse(json.stdout) as Array<{ entryId: string; partition: number }>;
    expect(lines.map((l) => ({ id: l.entryId, partition: l.partition }))).toEqual(
      written.slice(0, 1200),
    );
  });
});

describe('the lifecycle of a partitioned stream by its name', () => {
  it('retention trims the partitions as one stream, oldest first, each below its floor; the archive gets exactly what is trimmed', async () => {
    const stream = fresh('retain');
    const P = 3;
    const archived: ArchivedEntry[] = [];
    @Injectable()
    class Archive {
      @StreamArchive(stream)
      fold(entries: ArchivedEntry[]): void {
        archived.push(...entries);
      }
    }
    // a group that never reads partition 1 holds every entry of it back
    await redis.xgroup('CREATE', `${stream}:p:1`, 'audit', '0', 'MKSTREAM');
    const handled: Array<{ seq: number; partition: number | undefined }> = [];
    const { app, stats } = await bootApp(
      { connection: server.url, retention: [{ stream, maxLen: 10 }] },
      [handlerOf(stream, { partitions: P }, handled), Archive],
    );
    const producer = app.get(StreamProducer);
    const published: Array<{ partition: number; entryId: string }> = [];
    for (let i = 0; i < 30; i++) {
      const key = `k${i}`;
      const { entryId } = await producer.publish(stream, { seq: i }, { key, partitions: P });
      published.push({ partition: crc32(key) % P, entryId });
    }
    await waitFor(() => handled.length === 30, { message: 'all handled' });
    const held = published.filter((p) => p.partition === 1);
    expect(held.length).toBeGreaterThan(0);
    const order = (
      a: { entryId: string; partition: number },
      b: { entryId: string; partition: number },
    ) => compareEntryIds(a.entryId, b.entryId) || a.partition - b.partition;
    const left = async () => {
      const out: Array<{ partition: number; entryId: string }> = [];
      for (let i = 0; i < P; i++)
        for (const [entryId] of await redis.xrange(`${stream}:p:${i}`, '-', '+'))
          out.push({ partition: i, entryId });
      return out.sort(order);
    };
    const key = (e: { partition?: number; entryId: string }) => `${e.partition}/${e.entryId}`;
    // settled: what the rule wants gone and the floors allow is gone
    await waitFor(
      async () => {
        const now = await left();
        // the report is the last run's: until the handler's group has acknowledged its last
        // entries (acks ride with its next read) a run may name it as the one holding back
        return (
          now.slice(0, now.length - 10).every((e) => e.partition === 1) &&
          stats.retention(stream).heldBackBy === 'audit'
        );
      },
      { message: "trimmed down to what partition 1 holds back, held back by 'audit'" },
    );
    let now = await left();
    for (const entry of held) expect(now.map(key)).toContain(key(entry));
    // nothing lost: every entry either left or archived, never both, never twice
    expect(new Set(archived.map(key)).size).toBe(archived.length);
    expect(
      [...now, ...archived.map((a) => ({ partition: a.partition!, entryId: a.entryId }))].sort(
        order,
      ),
    ).toEqual([...published].sort(order));

    // the group gone: the newest 10 of the whole stream are left, the rest archived once
    await redis.xgroup('DESTROY', `${stream}:p:1`, 'audit');
    await waitFor(async () => (await left()).length === 10, { message: 'down to maxLen' });
    now = await left();
    expect(now).toEqual([...published].sort(order).slice(-10));
    expect(archived.map(key).sort()).toEqual(
      [...published].sort(order).slice(0, 20).map(key).sort(),
    );
    expect(stats.retention(stream)).toMatchObject({ length: 10, heldBackBy: null });
  });

  it("consumer cleanup works on the partitions: idle empty consumers go, a lease holder, one holding entries and this process's own stay", async () => {
    const stream = fresh('cleanup');
    const P = 2;
    const [p0, p1] = [`${stream}:p:0`, `${stream}:p:1`];
    for (const p of [p0, p1]) {
      await redis.xgroup('CREATE', p, 'g', '0', 'MKSTREAM');
      await redis.xadd(p, '*', 'id', 'x', 'data', '{}', 'pkey', 'x');
    }
    // partition 1 is leased to a live process that never reads (60 s left): this app cannot take it
    const serverMs = Number((await redis.time())[0]) * 1000;
    await redis.hset(
      leaseKeyOf(stream, 'g'),
      'o:1',
      'zombie',
      'e:1',
      String(serverMs + 60_000),
      'g:1',
      '1',
    );
    await redis.xgroup('CREATECONSUMER', p0, 'g', 'ghost');
    await redis.xgroup('CREATECONSUMER', p1, 'g', 'ghost2');
    await redis.xgroup('CREATECONSUMER', p1, 'g', 'zombie');
    await redis.xreadgroup('GROUP', 'g', 'holder', 'COUNT', 1, 'STREAMS', p1, '>');
    const handled: Array<{ seq: number; partition: number | undefined }> = [];
    await bootApp({ connection: server.url, consumerName: 'a' }, [
      handlerOf(
        stream,
        { partitions: P, consumerCleanup: { idleMs: 1000 }, minIdleMs: 60_000 },
        handled,
      ),
    ]);
    const names = async (p: string) =>
      ((await redis.xinfo('CONSUMERS', p, 'g')) as unknown[][]).map((c) => String(c[1])).sort();
    await waitFor(
      async () => !(await names(p0)).includes('ghost') && !(await names(p1)).includes('ghost2'),
      {
        timeoutMs: 10_000,
        message: 'the idle empty consumers deleted',
      },
    );
    expect(await names(p0)).toEqual(['a']);
    expect(await names(p1)).toEqual(['holder', 'zombie']);
  });
});
