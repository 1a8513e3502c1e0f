/**
 * The dashboard's answers stay bounded whatever the streams hold (README "Dashboard"), against a
 * real redis-server: a dead-letter page of huge letters is at most 1 MiB and shortens itself
 * with a `next` that continues, cut values are marked, the app's heap does not swallow the
 * letters; a PEL page costs one XRANGE, not one per row; the overview counts each group's own
 * dead letters.
 */
import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import type { Redis } from 'ioredis';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import type { DeadLetterPageView, OverviewView, PendingPageView } from '../../lib';
import { startDashboardApp } from '../fixtures/dashboard.app';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';

const BULKY = 'bulky';
const SPLIT = 'split';
const PEL = 'pel100';
const LETTERS = 1000;
const ERROR_BYTES = 500 * 1024;
const MiB = 1024 * 1024;

// a full collection before each heap reading, so garbage not yet collected is not counted
v8.setFlagsFromString('--expose-gc');
const collect = vm.runInNewContext('gc') as () => void;

let server: RedisServer;
let redis: Redis;
let app: INestApplication;
let base: string;

/** A dead letter as the engine writes it (lib/consumer/settle/dead-letter-path.ts). */
function letterFields(stream: string, group: string, i: number, error: string): string[] {
  return [
    'id',
    `${stream}-${i}`,
    'data',
    JSON.stringify({ n: i }),
    'dlq_reason',
    'handler_error',
    'dlq_stream',
    stream,
    'dlq_group',
    group,
    'dlq_entry_id',
    `${i + 1}-0`,
    'dlq_attempts',
    '3',
    'dlq_error',
    error,
    'dlq_at',
    new Date().toISOString(),
  ];
}

async function xrangeCalls(): Promise<number> {
  const info = await redis.info('commandstats');
  return Number(/cmdstat_xrange:calls=(\d+)/.exec(info)?.[1] ?? 0);
}

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
  const error = `${'E'.repeat(ERROR_BYTES - 10)}… the end`;
  for (let done = 0; done < LETTERS; done += 50) {
    const pipeline = redis.pipeline();
    for (let i = done; i < done + 50; i++) {
      pipeline.xadd(`${BULKY}:dlq`, '*', ...letterFields(BULKY, 'billing', i, error));
    }
    await pipeline.exec();
  }
  await redis.xgroup('CREATE', SPLIT, 'billing', '$', 'MKSTREAM');
  await redis.xgroup('CREATE', SPLIT, 'shipping', '$');
  const split = redis.pipeline();
  for (let i = 0; i < 10; i++) {
    split.xadd(`${SPLIT}:dlq`, '*', ...letterFields(SPLIT, i < 8 ? 'billing' : 'shipping', i, 'x'));
  }
  // a letter of another stream in the same dead-letter stream counts for neither
  split.xadd(`${SPLIT}:dlq`, '*', ...letterFields('elsewhere', 'billing', 99, 'x'));
  for (let i = 0; i < 100; i++) split.xadd(PEL, '*', 'id', `p-${i}`, 'data', '{}');
  split.xgroup('CREATE', PEL, 'g', '0');
  split.xreadgroup('GROUP', 'g', 'c', 'COUNT', 100, 'STREAMS', PEL, '>');
  await split.exec();
  ({ app, base } = await startDashboardApp(server.url, 'express', 'dash-bounds', {
    streams: [BULKY, SPLIT, PEL],
  }));
}, 120_000);

afterAll(async () => {
  await app?.close();
  await stopAllRedisServers();
});

it('a page of 1,000 letters of 500 KB errors is at most 1 MiB, shorter, cut values marked, next continues', async () => {
  collect();
  const heapBefore = process.memoryUsage().heapUsed;
  const res = await fetch(`${base}/echo-stream/api/streams/${BULKY}/dead-letters?count=1000`);
  expect(res.status).toBe(200);
  const bytes = Buffer.from(await res.arrayBuffer());
  expect(bytes.length).toBeLessThanOrEqual(MiB);
  const page = JSON.parse(bytes.toString('utf8')) as DeadLetterPageView;
  expect(page.entries.length).toBeGreaterThan(0);
  expect(page.entries.length).toBeLessThan(LETTERS);
  expect(page.next).toBe(page.entries[page.entries.length - 1].entryId);
  for (const letter of page.entries) {
    expect(letter.cut).toBe(true);
    expect(letter.error!.length).toBeLessThanOrEqual(8193);
    expect(letter.error!.endsWith('…')).toBe(true);
    expect(letter.error!.startsWith('EEEE')).toBe(true);
  }
  collect();
  const grown = process.memoryUsage().heapUsed - heapBefore;
  if (process.env.DASHBOARD_BOUNDS_FIGURES) {
    process.stdout.write(
      `\nbounded page: ${bytes.length} bytes, ${page.entries.length} letters, heap +${(grown / MiB).toFixed(1)} MiB\n`,
    );
  }
  expect(grown).toBeLessThan(100 * MiB);

  // the next page starts right after this one: every letter is reached, none twice. Fetched
  // before the XRANGE below (tens of MB of letters): fetch reuses the first page's keep-alive
  // socket, which the server closes after 5 idle seconds, and a reuse that meets that close is
  // reset (ECONNRESET on a loaded machine)
  const second = (await (
    await fetch(`${base}/echo-stream/api/streams/${BULKY}/dead-letters?count=5&after=${page.next}`)
  ).json()) as DeadLetterPageView;
  const ids = (await redis.xrange(`${BULKY}:dlq`, '-', '+', 'COUNT', page.entries.length + 5)).map(
    ([id]) => id,
  );
  expect([...page.entries, ...second.entries].map((l) => l.entryId)).toEqual(ids);
  expect(second.next).toBe(ids[ids.length - 1]);
});

it('a PEL page of 100 rows reads the bodies with one XRANGE, not one per row', async () => {
  const before = await xrangeCalls();
  const page = (await (
    await fetch(`${base}/echo-stream/api/streams/${PEL}/groups/g/pending?count=100`)
  ).json()) as PendingPageView;
  const calls = (await xrangeCalls()) - before;
  if (process.env.DASHBOARD_BOUNDS_FIGURES) process.stdout.write(`\nPEL page: ${calls} XRANGE\n`);
  expect(calls).toBeGreaterThanOrEqual(1);
  expect(calls).toBeLessThanOrEqual(2);
  expect(page.entries).toHaveLength(100);
  expect(page.entries[99]).toMatchObject({ consumer: 'c', preview: 'id=p-99 data={}', cut: false });
});

it('the overview shows each group its own dead letters and the stream the total', async () => {
  const counts = async () => {
    const overview = (await (
      await fetch(`${base}/echo-stream/api/overview`)
    ).json()) as OverviewView;
    const split = overview.streams.find((s) => s.stream === SPLIT)!;
    const group = (name: string) => split.groups.find((g) => g.group === name)!.deadLetters;
    return [group('billing'), group('shipping'), split.deadLetters, split.deadLettersExact];
  };
  expect(await counts()).toEqual([8, 2, 10, true]);
  // letters added since the last count are counted on top of it
  const more = redis.pipeline();
  for (let i = 10; i < 13; i++) {
    more.xadd(`${SPLIT}:dlq`, '*', ...letterFields(SPLIT, 'billing', i, 'x'));
  }
  await more.exec();
  expect(await counts()).toEqual([11, 2, 13, true]);
  // a letter removed (delete, redrive, trim) makes it count again
  const shipping = (await redis.xrange(`${SPLIT}:dlq`, '-', '+')).find(([, fields]) =>
    fields.includes('shipping'),
  )!;
  await redis.xdel(`${SPLIT}:dlq`, shipping[0]);
  expect(await counts()).toEqual([11, 1, 12, true]);
});
