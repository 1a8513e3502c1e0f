/**
 * Skipped entries on the dashboard (docs/delivery.md "Duplicates and stale replays"), against a
 * real redis-server: a handler with `dedup` and `newerWins` acks a foreign producer's duplicates
 * and a stale replay without a call, and the overview API shows its loop's `totalDuplicates` and
 * `totalStale` on the group (`null` for a group the app runs no loop of); in headless Chromium
 * the group row shows them as text. Without Chromium the page test is skipped with one line
 * saying so.
 */
import 'reflect-metadata';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import type { Browser } from 'playwright-core';
import { brandedId, EchoStreamDashboardModule, EchoStreamModule, StreamHandler } from '../../lib';
import type { GroupView, OverviewView, StreamMessage } from '../../lib';
import {
  CHROMIUM,
  CHROMIUM_ARGS,
  hasChromium,
  reportSkippedWithoutChromium,
} from '../support/chromium';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

const STREAM = 'ledger';
/** A group name as hostile as a page can get: markup, and a right-to-left override. */
const HOSTILE_GROUP = '<img src=x onerror="globalThis.__pwned=1">\u202Eg';

interface Posting {
  account: string;
  n: number;
}

const handled: string[] = [];

@Injectable()
class LedgerHandlers {
  @StreamHandler(STREAM, 'postings', {
    blockMs: 200,
    dedup: true,
    newerWins: (m: StreamMessage<Posting>) => m.payload.account,
  })
  post(message: StreamMessage<Posting>): void {
    handled.push(message.entryId);
  }
}

let server: RedisServer;
let redis: Redis;
let app: INestApplication;
let base: string;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
  @Module({
    imports: [
      EchoStreamModule.forRoot({ connection: server.url }),
      EchoStreamDashboardModule.register({}),
    ],
    providers: [LedgerHandlers],
  })
  class LedgerAppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [LedgerAppModule] }).compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  base = `http://127.0.0.1:${port}`;
  await waitFor(async () => ((await redis.xinfo('GROUPS', STREAM)) as unknown[]).length === 1, {
    message: 'the postings group exists',
  });
  // a group of another app: this one runs no loop of it
  await redis.xgroup('CREATE', STREAM, HOSTILE_GROUP, '$');
});
afterAll(async () => {
  await app?.close();
  await stopAllRedisServers();
});

/** XADD by hand, as a foreign producer would. */
async function xadd(id: string, posting: Posting): Promise<string> {
  return String(await redis.xadd(STREAM, '*', 'id', id, 'data', JSON.stringify(posting)));
}

/** Waits until the postings group acked everything (its PEL empty, every entry delivered). */
async function allAcked(): Promise<void> {
  await waitFor(
    async () => {
      const [pending] = (await redis.xpending(STREAM, 'postings')) as [number];
      const groups = (await redis.xinfo('GROUPS', STREAM)) as unknown[][];
      const row = groups.find((g) => g[g.indexOf('name') + 1] === 'postings')!;
      const read = Number(row[row.indexOf('entries-read') + 1]);
      return Number(pending) === 0 && read === (await redis.xlen(STREAM));
    },
    { message: 'postings acked every entry' },
  );
  await sleep(300); // the XACK and its skip record go out with the next read
}

async function groups(): Promise<Map<string, GroupView>> {
  const overview = (await (await fetch(`${base}/echo-stream/api/overview`)).json()) as OverviewView;
  const stream = overview.streams.find((s) => s.stream === STREAM)!;
  return new Map(stream.groups.map((g) => [g.group, g]));
}

describe('skips on the dashboard', () => {
  it('the overview API shows totalDuplicates and totalStale of the loop; null for a group the app runs none of', async () => {
    expect((await groups()).get('postings')).toMatchObject({
      totalDuplicates: 0,
      totalStale: 0,
      totalFenced: 0,
    });

    const older = brandedId();
    const newer = brandedId();
    const other = brandedId();
    const first = await xadd(newer, { account: 'acct-1', n: 2 });
    const second = await xadd(other, { account: 'acct-2', n: 1 });
    await allAcked();
    // a foreign producer's duplicates of both, then an older entry of acct-1 (a stale replay)
    await xadd(newer, { account: 'acct-1', n: 2 });
    await xadd(other, { account: 'acct-2', n: 1 });
    await allAcked();
    await xadd(older, { account: 'acct-1', n: 1 });
    await allAcked();

    expect(handled).toEqual([first, second]);
    const byGroup = await groups();
    expect(byGroup.get('postings')).toMatchObject({
      handler: 'LedgerHandlers.post',
      totalDuplicates: 2,
      totalStale: 1,
    });
    expect(byGroup.get(HOSTILE_GROUP)).toMatchObject({
      totalDuplicates: null,
      totalStale: null,
      totalFenced: null,
    });
  });
});

const describeWithChromium = hasChromium ? describe : describe.skip;

describeWithChromium('skips on the page in headless Chromium', () => {
  let browser: Browser | undefined;
  beforeAll(async () => {
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('the group row shows duplicates / stale; a group of another app shows dashes; a hostile group name stays text', async () => {
    const page = await browser!.newPage({ viewport: { width: 1500, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${base}/echo-stream`);
    await page.waitForSelector('#status.live', { timeout: 10_000 });
    const cell = (group: string, field: string) =>
      page.locator(`tr[data-group="${STREAM}/${group}"] [data-field="${field}"]`).first();
    const duplicatesNow = (await groups()).get('postings')!.totalDuplicates;
    await waitFor(
      async () => (await cell('postings', 'duplicates').textContent()) === String(duplicatesNow),
      { message: 'the postings row shows its duplicates' },
    );
    expect(await cell('postings', 'stale').textContent()).toBe('1');
    expect(await cell('postings', 'skipped').textContent()).toBe(`${duplicatesNow} / 1`);
    expect(await cell('postings', 'skipped').getAttribute('title')).toContain(
      'duplicates (dedup) / stale replays (newerWins)',
    );

    // the header names the column; the numbers line up under it
    const headers = await page.locator('#overview thead th').allTextContents();
    const row = page.locator(`tr[data-group="${STREAM}/postings"] > td`);
    const cells = await row.evaluateAll((tds) => tds.map((td) => td.getAttribute('data-field')));
    expect(cells.indexOf('skipped')).toBe(headers.indexOf('Skipped (dup / stale)'));
    // exactlyOnce commits refused: none for this handler, in their own column
    expect(cells.indexOf('fenced')).toBe(headers.indexOf('Fenced'));
    expect(await cell('postings', 'fenced').textContent()).toBe('0');
    const streamCells = await page
      .locator(`tr.stream-row[data-stream="${STREAM}"] > td`)
      .evaluateAll((tds) => tds.reduce((n, td) => n + Number(td.getAttribute('colspan') ?? 1), 0));
    expect(streamCells).toBe(headers.length);

    // the group of another app: dashes, and its name as text (the override shown as an escape)
    const hostileRow = page.locator('tr.group-row').filter({ hasText: '<img' });
    expect(await hostileRow.locator('[data-field="skipped"]').textContent()).toBe('— / —');
    expect(await hostileRow.locator('[data-field="fenced"]').textContent()).toBe('—');
    expect(await hostileRow.locator('[data-field="group"]').textContent()).toBe(
      '<img src=x onerror="globalThis.__pwned=1">\\u202Eg',
    );
    expect(await page.locator('main img').count()).toBe(0);
    expect(
      await page.evaluate(() => (globalThis as { __pwned?: unknown }).__pwned),
    ).toBeUndefined();
    expect(errors).toEqual([]);
    await page.close();
  });
});

reportSkippedWithoutChromium('dashboard-skips.e2e');
