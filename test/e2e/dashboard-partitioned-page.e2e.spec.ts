/**
 * A partitioned stream on the dashboard page in headless Chromium, against a real redis-server
 * (docs/operations.md "Dashboard"): selecting its group shows the PEL of every partition merged
 * oldest first, each row with its partition; "next" continues at the same entry id in the next
 * partition (the cursor carries the partition); the tail shows its entries newest first with
 * their partition; entry content shows as text, escaped. Without Chromium the test is skipped
 * with one line saying so.
 */
import 'reflect-metadata';
import { Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import type { Browser, Page } from 'playwright-core';
import { EchoStreamDashboardModule, EchoStreamModule } from '../../lib';
import { partitionCountKeyOf } from '../../lib/redis/package-keys';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import {
  CHROMIUM,
  CHROMIUM_ARGS,
  hasChromium,
  reportSkippedWithoutChromium,
} from '../support/chromium';
import { waitFor } from '../support/wait-for';

const describeWithChromium = hasChromium ? describe : describe.skip;
const STREAM = 'ledger';
/** 25 entries: three partitions share each id (1000-0 in 0, 1 and 2, then 1001-0 ...). */
const ROWS = Array.from({ length: 25 }, (_, i) => ({
  id: `${1000 + Math.floor(i / 3)}-0`,
  partition: i % 3,
}));

describeWithChromium('a partitioned stream on the dashboard page', () => {
  let server: RedisServer;
  let redis: Redis;
  let app: INestApplication;
  let base: string;
  let browser: Browser | undefined;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    server = await RedisServer.start();
    redis = server.client();
    await redis.set(partitionCountKeyOf(STREAM), '3');
    for (const [i, { id, partition }] of ROWS.entries()) {
      const note = i === 24 ? ['note', 'rtl\u202Egnp.exe'] : [];
      await redis.xadd(`${STREAM}:p:${partition}`, id, 'n', String(i), ...note);
    }
    for (const p of [0, 1, 2]) {
      const key = `${STREAM}:p:${p}`;
      await redis.xgroup('CREATE', key, 'billing', '0');
      await redis.xreadgroup('GROUP', 'billing', `worker-${p}`, 'STREAMS', key, '>');
    }
    @Module({
      imports: [
        EchoStreamModule.forRoot({ connection: server.url, consumerName: 'page' }),
        EchoStreamDashboardModule.register({ streams: [STREAM] }),
      ],
    })
    class PageApp {}
    const moduleRef = await Test.createTestingModule({ imports: [PageApp] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    page.on('pageerror', (err) => pageErrors.push(err.message));
    page.on('console', (msg) => {
      if (msg.type() === 'error') pageErrors.push(msg.text());
    });
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await stopAllRedisServers();
  });

  /** The rows of a list as `<id>@<partition>` (the partition as the page shows it). */
  const shown = (list: string) =>
    page.$$eval(`#${list} tbody tr`, (rows) =>
      rows.map(
        (row) =>
          `${row.getAttribute('data-entry-id')}@${row.querySelector('[data-field="partition"]')?.textContent}`,
      ),
    );
  const expected = (rows: typeof ROWS) => rows.map((r) => `${r.id}@p${r.partition}`);

  it('its PEL merged oldest first and its tail newest first, each row with its partition; next pages on', async () => {
    await page.goto(`${base}/echo-stream`);
    await page.waitForSelector('#status.live', { timeout: 10_000 });
    await page.locator(`tr[data-group="${STREAM}/billing"] [data-field="group"]`).click();
    await waitFor(async () => (await shown('pending')).length === 20, {
      message: 'the first PEL page shows 20 entries',
    });
    expect(await shown('pending')).toEqual(expected(ROWS.slice(0, 20)));
    expect(await page.locator('#pending-total').textContent()).toBe('(25 in the PEL)');
    const first = page.locator('#pending tbody tr').first();
    expect(await first.locator('td').nth(1).textContent()).toBe('worker-0');
    expect(await first.getAttribute('data-partition')).toBe('0');
    // the page ends at 1006-0 of partition 1: the next starts at 1006-0 of partition 2
    await page.click('#pending .pager button[data-page="next"]');
    await waitFor(async () => (await shown('pending')).length === 5, {
      message: 'the next PEL page shows the last 5',
    });
    expect(await shown('pending')).toEqual(expected(ROWS.slice(20)));

    await waitFor(async () => (await shown('tail')).length === 20, {
      message: 'the tail shows 20 entries',
    });
    expect(await shown('tail')).toEqual(expected([...ROWS].reverse().slice(0, 20)));
    expect(await page.locator('#tail-length').textContent()).toBe('(25 entries, newest first)');
    const newest = page.locator('#tail tbody tr').first().locator('td.payload');
    expect(await newest.textContent()).toBe('n=24 note=rtl\\u202Egnp.exe');
    expect(await newest.locator('.invisible').count()).toBe(1);
    expect(pageErrors).toEqual([]);
  });
});

reportSkippedWithoutChromium('dashboard-partitioned-page.e2e');
