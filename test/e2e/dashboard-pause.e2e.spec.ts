/**
 * Pause and Resume on the dashboard (docs/operations.md "Pausing a group"), against a real
 * redis-server: the POST routes pause the group for every process (the app's own loop shows
 * `paused` and starts nothing until resumed), they refuse what every mutation refuses (read-only,
 * cross-origin, non-JSON; an unknown group), and in headless Chromium the Pause button asks first
 * (cancelled: nothing sent), pauses, and turns into Resume. Without Chromium the page test is
 * skipped with one line saying so.
 */
import 'reflect-metadata';
import { Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import type { Browser, Page } from 'playwright-core';
import { EchoStreamDashboardModule, EchoStreamModule } from '../../lib';
import { PARCELS, startParcelsApp } from '../fixtures/parcels.app';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import {
  CHROMIUM,
  CHROMIUM_ARGS,
  hasChromium,
  reportSkippedWithoutChromium,
} from '../support/chromium';
import { sleep, waitFor } from '../support/wait-for';

let server: RedisServer;
let redis: Redis;
let app: INestApplication;
let base: string;

const PAUSE_KEY = `{${PARCELS}}:echo-paused:billing`;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
  ({ app, base } = await startParcelsApp(server.url));
  await waitFor(async () => ((await redis.xinfo('GROUPS', PARCELS)) as unknown[]).length === 2, {
    message: 'the billing and shipping groups exist',
  });
});
afterAll(async () => {
  await app?.close();
  await stopAllRedisServers();
});

const post = (at: string, path: string, headers: Record<string, string> = {}) =>
  fetch(`${at}/echo-stream/api/streams/${encodeURIComponent(PARCELS)}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: at, ...headers },
    body: '{}',
  });

interface OverviewGroup {
  group: string;
  state: string | null;
  pausedSince: string | null;
}
async function billing(): Promise<OverviewGroup> {
  const overview = (await (await fetch(`${base}/echo-stream/api/overview`)).json()) as {
    streams: Array<{ stream: string; groups: OverviewGroup[] }>;
  };
  return overview.streams
    .find((s) => s.stream === PARCELS)!
    .groups.find((g) => g.group === 'billing')!;
}

/** Entries delivered to `group` so far (XINFO GROUPS `entries-read`). */
async function entriesRead(group: string): Promise<number> {
  const groups = (await redis.xinfo('GROUPS', PARCELS)) as unknown[][];
  const row = groups.find((g) => g[g.indexOf('name') + 1] === group)!;
  return Number(row[row.indexOf('entries-read') + 1]);
}

describe('the pause routes', () => {
  afterEach(async () => {
    await redis.del(PAUSE_KEY);
  });

  it('pause: the loop shows paused and reads nothing; the overview says since when; resume: it reads again', async () => {
    const res = await post(base, '/groups/billing/pause');
    expect([res.status, await res.json()]).toEqual([
      200,
      { stream: PARCELS, group: 'billing', paused: true },
    ]);
    expect(await redis.exists(PAUSE_KEY)).toBe(1);
    // the default claimIntervalMs of the fixture is 5000
    await waitFor(async () => (await billing()).state === 'paused', {
      timeoutMs: 12_000,
      message: "billing's loop shows paused",
    });
    expect((await billing()).pausedSince).toMatch(/^\d{4}-\d\d-\d\dT/);
    const readBefore = await entriesRead('billing');
    const shippingBefore = await entriesRead('shipping');
    await redis.xadd(PARCELS, '*', 'id', 'parcel-paused', 'data', JSON.stringify({ n: 100 }));
    await waitFor(async () => (await entriesRead('shipping')) === shippingBefore + 1, {
      message: 'shipping (not paused) reads it',
    });
    await sleep(500);
    expect(await entriesRead('billing')).toBe(readBefore);

    const resumed = await post(base, '/groups/billing/resume');
    expect([resumed.status, await resumed.json()]).toEqual([
      200,
      { stream: PARCELS, group: 'billing', paused: false },
    ]);
    await waitFor(async () => (await entriesRead('billing')) === readBefore + 1, {
      timeoutMs: 12_000,
      message: 'billing reads it once resumed',
    });
    expect(await billing()).toMatchObject({ state: 'running', pausedSince: null });
  });

  it('refuses cross-origin and non-JSON requests and an unknown group, pausing nothing', async () => {
    const refusals: Array<[Record<string, string>, number]> = [
      [{ origin: 'http://evil.example' }, 403],
      [{ 'sec-fetch-site': 'cross-site' }, 403],
      [{ 'content-type': 'text/plain' }, 415],
    ];
    for (const [headers, status] of refusals) {
      expect((await post(base, '/groups/billing/pause', headers)).status).toBe(status);
    }
    expect((await post(base, '/groups/nope/pause')).status).toBe(404);
    expect(await redis.keys(`*echo-paused*`)).toEqual([]);
  });

  it('a read-only dashboard refuses both (403), pausing nothing', async () => {
    @Module({
      imports: [
        EchoStreamModule.forRoot({ connection: server.url }),
        EchoStreamDashboardModule.register({ streams: [PARCELS] }),
      ],
    })
    class ReadOnlyModule {}
    const moduleRef = await Test.createTestingModule({ imports: [ReadOnlyModule] }).compile();
    const readOnly = moduleRef.createNestApplication({ logger: false });
    await readOnly.listen(0, '127.0.0.1');
    try {
      const { port } = readOnly.getHttpServer().address() as AddressInfo;
      const at = `http://127.0.0.1:${port}`;
      expect((await post(at, '/groups/billing/pause')).status).toBe(403);
      await redis.set(PAUSE_KEY, '1');
      expect((await post(at, '/groups/billing/resume')).status).toBe(403);
      expect(await redis.exists(PAUSE_KEY)).toBe(1);
    } finally {
      await readOnly.close();
    }
  });
});

const describeWithChromium = hasChromium ? describe : describe.skip;

describeWithChromium('the Pause and Resume buttons in headless Chromium', () => {
  let browser: Browser | undefined;
  beforeAll(async () => {
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  });
  afterAll(async () => {
    await browser?.close();
    await redis.del(PAUSE_KEY);
  });

  it('Pause asks first (cancelled: nothing sent), then pauses every process; the button turns into Resume, which resumes', async () => {
    const page: Page = await browser!.newPage({ viewport: { width: 1400, height: 900 } });
    const posts: string[] = [];
    const dialogs: string[] = [];
    const answer = { accept: false };
    const errors: string[] = [];
    page.on('request', (r) => {
      if (r.method() === 'POST') posts.push(new URL(r.url()).pathname);
    });
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void (answer.accept ? d.accept() : d.dismiss());
    });
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${base}/echo-stream`);
    await page.waitForSelector('#status.live', { timeout: 10_000 });
    const row = page.locator(`tr[data-group="${PARCELS}/billing"]`);
    const button = row.locator('button.pause-toggle');
    await waitFor(async () => (await button.count()) === 1, { message: 'the Pause button' });
    expect(await button.textContent()).toBe('Pause');

    await button.click();
    await waitFor(() => dialogs.length === 1, { message: 'the question' });
    expect(dialogs[0]).toBe(
      `Pause group billing of ${PARCELS}? Every process stops starting its entries until it is resumed.`,
    );
    await sleep(300);
    expect(posts).toEqual([]);
    expect(await redis.exists(PAUSE_KEY)).toBe(0);

    answer.accept = true;
    await button.click();
    await waitFor(async () => (await redis.exists(PAUSE_KEY)) === 1, { message: 'paused' });
    expect(posts).toEqual([`/echo-stream/api/streams/${PARCELS}/groups/billing/pause`]);
    await waitFor(async () => (await button.textContent()) === 'Resume', {
      message: 'the button turns into Resume',
    });
    await waitFor(
      async () => (await row.locator('[data-field="state"]').textContent()) === 'paused',
      { timeoutMs: 15_000, message: 'the state cell shows paused' },
    );

    await button.click();
    await waitFor(async () => (await redis.exists(PAUSE_KEY)) === 0, { message: 'resumed' });
    expect(dialogs[2]).toBe(`Resume group billing of ${PARCELS}?`);
    await waitFor(async () => (await button.textContent()) === 'Pause', {
      message: 'the button turns back into Pause',
    });
    expect(errors).toEqual([]);
    await page.close();
  });
});

reportSkippedWithoutChromium('dashboard-pause.e2e');
