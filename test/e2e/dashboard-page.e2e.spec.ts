/**
 * The dashboard page in headless Chromium (Debian's `chromium`; `CHROMIUM_BIN` may point at
 * another binary), against a real redis-server: what a person sees (a lagging group, the PEL,
 * the dead letters, the tail), that a click on "Redrive" moves a dead letter back, that hostile
 * entry content shows as text and never runs, and that no request leaves the origin. Without
 * Chromium the test is skipped with one line saying so. DASHBOARD_SCREENSHOT=<file.png> saves a
 * screenshot of the page (the README's).
 */
import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { Browser, Page } from 'playwright-core';
import {
  DASHBOARD_STREAM,
  HOSTILE_PAYLOADS,
  KeyGuard,
  seedDashboardStream,
  startDashboardApp,
} from '../fixtures/dashboard.app';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import {
  CHROMIUM,
  CHROMIUM_ARGS,
  hasChromium,
  reportSkippedWithoutChromium,
} from '../support/chromium';
import { waitFor } from '../support/wait-for';

const describeWithChromium = hasChromium ? describe : describe.skip;
const DLQ = `${DASHBOARD_STREAM}:dlq`;

describeWithChromium('dashboard page in headless Chromium', () => {
  let server: RedisServer;
  let redis: Redis;
  let app: INestApplication;
  let base: string;
  let browser: Browser | undefined;
  let page: Page;
  let pendingIds: string[];
  const pageErrors: string[] = [];
  const requests: string[] = [];

  beforeAll(async () => {
    server = await RedisServer.start();
    redis = server.client();
    ({ app, base } = await startDashboardApp(server.url, 'express', 'dash-page', {
      readOnly: false,
      guards: [KeyGuard],
    }));
    await waitFor(async () => (await redis.xinfo('GROUPS', DASHBOARD_STREAM)) as unknown[], {
      message: 'the billing group exists',
    });
    ({ pendingIds } = await seedDashboardStream(redis, 300));
    await waitFor(async () => (await redis.xlen(DLQ)) === 2, {
      message: 'billing dead-letters both undecodable entries',
    });
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    // the guard's key on every request, as an app's own auth (a session cookie) would be
    page = await browser.newPage({
      viewport: { width: 1440, height: 900 },
      extraHTTPHeaders: { 'x-dashboard-key': 'let-me-in' },
    });
    page.on('pageerror', (err) => pageErrors.push(err.message));
    page.on('console', (msg) => {
      if (msg.type() === 'error') pageErrors.push(msg.text());
    });
    page.on('dialog', (dialog) => void dialog.accept());
    page.on('request', (request) => requests.push(request.url()));
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await stopAllRedisServers();
  });

  const cell = (group: string, field: string) =>
    page.locator(`tr[data-group="${DASHBOARD_STREAM}/${group}"] [data-field="${field}"]`);
  const count = async (group: string, field: string) =>
    Number((await cell(group, field).textContent())?.replace(/,/g, '') ?? NaN);

  it('shows the groups, the PEL, the dead letters and the tail; redrive moves a letter back', async () => {
    await page.goto(`${base}/echo-stream`);
    await expect(page.title()).resolves.toBe('echo-stream dashboard');
    await page.waitForSelector('#status.live', { timeout: 10_000 });
    expect(await page.locator('#mode').textContent()).toBe('read-write');

    // overview: the app's own group runs; the foreign `reporting` group lags by the whole stream
    const total = await redis.xlen(DASHBOARD_STREAM);
    await waitFor(async () => (await count('reporting', 'lag')) === total, {
      message: 'the page shows reporting lagging by the whole stream',
    });
    expect(await cell('billing', 'state').textContent()).toBe('running');
    expect(await cell('reporting', 'state').textContent()).toBe('external');
    expect(await count('audit', 'pending')).toBe(pendingIds.length);
    expect(await cell('audit', 'consumers').textContent()).toBe(
      `stuck-worker (${pendingIds.length})`,
    );
    expect(await count('billing', 'deadLetters')).toBe(2);
    expect(await cell('audit', 'oldestPending').textContent()).toMatch(/\d+(\.\d)? (ms|s)|\d+ m/);

    // the PEL of `audit`, one page of 20, then the next page
    await cell('audit', 'group').click();
    await waitFor(async () => (await page.locator('#pending-group').textContent()) === 'audit', {
      message: 'the details show the audit group',
    });
    await waitFor(async () => (await page.locator('#pending tbody tr').count()) === 20, {
      message: 'the first PEL page shows 20 entries',
    });
    const firstRow = page.locator('#pending tbody tr').first();
    expect(await firstRow.getAttribute('data-entry-id')).toBe(pendingIds[0]);
    expect(await firstRow.locator('td').nth(1).textContent()).toBe('stuck-worker');
    expect(await firstRow.locator('td.payload').textContent()).toBe('id=pay-0 data={"n":0}');
    expect(await page.locator('#pending-total').textContent()).toBe(
      `(${pendingIds.length} in the PEL)`,
    );
    await page.click('#pending .pager button[data-page="next"]');
    await waitFor(
      async () =>
        (await page.locator('#pending tbody tr').first().getAttribute('data-entry-id')) ===
        pendingIds[20],
      { message: 'the next PEL page starts at the 21st entry' },
    );

    // hostile content: shown as text in the tail and the dead letters, never run
    for (const [i, payload] of HOSTILE_PAYLOADS.entries()) {
      const asText = `id=bad-${i} data=${payload}`;
      expect(await page.locator('#tail td.payload').allTextContents()).toContain(asText);
      expect(await page.locator('#dead-letters td.payload').allTextContents()).toContain(asText);
    }
    expect(await page.locator('main img, main script').count()).toBe(0);
    expect(
      await page.evaluate(() => (globalThis as { __pwned?: unknown }).__pwned),
    ).toBeUndefined();

    // the dead letters, and a click on "Redrive" for the first one
    const letters = page.locator('#dead-letters tbody tr');
    expect(await letters.count()).toBe(2);
    expect(await letters.first().locator('[data-field="reason"]').textContent()).toBe(
      'decode_error',
    );
    expect(await letters.first().locator('[data-field="error"]').textContent()).toMatch(/JSON/);
    const letterId = (await letters.first().getAttribute('data-entry-id'))!;
    const lengthBefore = await redis.xlen(DASHBOARD_STREAM);
    await letters.first().locator('button.redrive').click();
    await waitFor(
      async () =>
        (await page.locator('#message').textContent()) ===
        `Redrove 1 dead letter(s) of ${DASHBOARD_STREAM} (${letterId})`,
      { message: 'the page says it redrove the letter' },
    );
    // Redis: the letter left the dead-letter stream, its fields are back in the source stream
    expect((await redis.xrange(DLQ, '-', '+')).map(([id]) => id)).not.toContain(letterId);
    expect(await redis.xlen(DASHBOARD_STREAM)).toBe(lengthBefore + 1);
    // the page: that letter's row is gone, the tail's newest entry is the redriven one
    await waitFor(
      async () =>
        (await page.locator(`#dead-letters tr[data-entry-id="${letterId}"]`).count()) === 0 &&
        ((await page.locator('#tail tbody tr td.payload').first().textContent()) ?? '').startsWith(
          'id=bad-0 ',
        ),
      { message: 'the page shows the letter moved back to the stream' },
    );

    // the figures move by themselves (auto-refresh), without a reload
    const lagBefore = await count('reporting', 'lag');
    await redis.xadd(DASHBOARD_STREAM, '*', 'id', 'late-1', 'data', '{}');
    await waitFor(async () => (await count('reporting', 'lag')) > lagBefore, {
      timeoutMs: 5000,
      message: 'the page shows the new entry in the lag without a reload',
    });

    if (process.env.DASHBOARD_SCREENSHOT) {
      // a few seconds of traffic, so the rates and sparklines show something
      for (let round = 0; round < 20; round++) {
        const pipeline = redis.pipeline();
        for (let i = 0; i < 40; i++) {
          pipeline.xadd(DASHBOARD_STREAM, '*', 'id', `flow-${round}-${i}`, 'data', '{"ok":1}');
        }
        await pipeline.exec();
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      await page.click('#pending .pager button[data-page="first"]');
      await page.evaluate(() =>
        (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0),
      );
      await new Promise((resolve) => setTimeout(resolve, 1600));
      await page.screenshot({ path: process.env.DASHBOARD_SCREENSHOT, fullPage: true });
    }
    expect(
      await page.evaluate(() => (globalThis as { __pwned?: unknown }).__pwned),
    ).toBeUndefined();
    expect(pageErrors).toEqual([]);
    expect(requests.length).toBeGreaterThan(3);
    expect(requests.filter((url) => !url.startsWith(`${base}/`))).toEqual([]);
  });
});

reportSkippedWithoutChromium('dashboard-page.e2e');
