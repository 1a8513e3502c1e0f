/**
 * The dashboard at the size docs/operations.md "Dashboard" names: 100 streams in the overview and a PEL of 100,000
 * entries read in pages (never whole), against a real redis-server. No speed is asserted here;
 * the test proves the answers are complete and paged at that size.
 */
import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { DASHBOARD_STREAM, startDashboardApp } from '../fixtures/dashboard.app';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';

const STREAMS = Array.from({ length: 100 }, (_, i) => `scale-${String(i).padStart(3, '0')}`);
const BIG_PEL = 100_000;

let server: RedisServer;
let redis: Redis;
let app: INestApplication;
let base: string;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
  const pipeline = redis.pipeline();
  for (const stream of STREAMS) {
    pipeline.xadd(stream, '*', 'id', `${stream}-1`, 'data', '{}');
    pipeline.xgroup('CREATE', stream, 'workers', '0');
  }
  await pipeline.exec();
  // one stream with a PEL of 100,000 entries held by one consumer
  for (let done = 0; done < BIG_PEL; done += 10_000) {
    const batch = redis.pipeline();
    for (let i = done; i < done + 10_000; i++)
      batch.xadd('scale-000', '*', 'id', `big-${i}`, 'data', '{}');
    await batch.exec();
  }
  await redis.xreadgroup(
    'GROUP',
    'workers',
    'hoarder',
    'COUNT',
    BIG_PEL + 1,
    'STREAMS',
    'scale-000',
    '>',
  );
  ({ app, base } = await startDashboardApp(server.url, 'express', 'dash-scale', {
    streams: STREAMS,
  }));
}, 120_000);

afterAll(async () => {
  await app?.close();
  await stopAllRedisServers();
});

it('overview lists all 100 streams with their group; the 100,000-entry PEL comes in pages', async () => {
  const overview = (await (await fetch(`${base}/echo-stream/api/overview`)).json()) as {
    streams: Array<{
      stream: string;
      groups: Array<{ group: string; pending: number; lag: number }>;
    }>;
  };
  expect(overview.streams.map((s) => s.stream)).toEqual([DASHBOARD_STREAM, ...STREAMS].sort());
  for (const stream of overview.streams.filter((s) => s.stream.startsWith('scale-'))) {
    expect(stream.groups.map((g) => g.group)).toEqual(['workers']);
  }
  const big = overview.streams.find((s) => s.stream === 'scale-000')!;
  expect(big.groups[0]).toMatchObject({ pending: BIG_PEL + 1, lag: 0 });

  const page = (await (
    await fetch(`${base}/echo-stream/api/streams/scale-000/groups/workers/pending?count=1000`)
  ).json()) as {
    pending: number;
    entries: Array<{ entryId: string; preview: string }>;
    next: string;
  };
  expect(page.pending).toBe(BIG_PEL + 1);
  expect(page.entries).toHaveLength(1000);
  expect(page.entries[1].preview).toBe('id=big-0 data={}');
  const last = (await (
    await fetch(
      `${base}/echo-stream/api/streams/scale-000/groups/workers/pending?count=1000&after=${page.next}`,
    )
  ).json()) as { entries: Array<{ preview: string }> };
  expect(last.entries[0].preview).toBe('id=big-999 data={}');
});
