/**
 * The sample HTTP app (sample/) in-process against a throw-away redis-server: its endpoints, and
 * its live page in headless Chromium (Debian's `chromium` package; `CHROMIUM_BIN` may point at
 * another binary). Without Chromium the page test is skipped with one line saying so; the HTTP
 * tests still run. SAMPLE_PAGE_SCREENSHOT=<file.png> saves a screenshot of the page.
 */
import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Browser, Page } from 'playwright-core';
import { Redis } from 'ioredis';
import { AppModule } from '../../sample/app.module';
import { SampleConfig } from '../../sample/config';
import type { StatsView } from '../../sample/stats/stats.service';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import {
  CHROMIUM,
  CHROMIUM_ARGS,
  hasChromium,
  reportSkippedWithoutChromium,
} from '../support/chromium';
import { waitFor } from '../support/wait-for';

const describeWithChromium = hasChromium ? describe : describe.skip;

let server: RedisServer;
let redis: Redis;
let app: INestApplication;
let base: string;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
    .overrideProvider(SampleConfig)
    .useValue(
      new SampleConfig({
        redisUrl: server.url,
        failureRate: 0,
        consumerName: 'sample-e2e',
        port: 0,
      }),
    )
    .compile();
  app = moduleRef.createNestApplication({ logger: false });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await app?.close();
  await stopAllRedisServers();
});

async function publish(order: Record<string, unknown>): Promise<Response> {
  return fetch(`${base}/orders`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(order),
  });
}

async function stats(): Promise<StatsView> {
  const res = await fetch(`${base}/stats`);
  expect(res.status).toBe(200);
  return (await res.json()) as StatsView;
}

function loop(view: StatsView, group: string) {
  const found = view.loops.find((l) => l.stream === 'orders' && l.group === group);
  if (!found) throw new Error(`no loop orders/${group} in /stats`);
  return found;
}

describe('sample app over HTTP', () => {
  it('publishes on POST /orders and shows the handled order in /stats and /metrics', async () => {
    const res = await publish({ sku: 'A-1', qty: 2 });
    expect(res.status).toBe(202);
    const receipt = (await res.json()) as { id: string; entryId: string };
    expect(receipt.id).toMatch(/^[0-9a-z]{24}$/);
    expect(receipt.entryId).toMatch(/^\d+-\d+$/);

    const view = await waitFor(
      async () => {
        const v = await stats();
        return loop(v, 'billing').totalAcked >= 1 && loop(v, 'shipping').totalAcked >= 1 ? v : null;
      },
      { message: 'billing and shipping ack the order' },
    ).then((v) => v!);
    expect(loop(view, 'billing')).toMatchObject({
      handler: 'OrdersHandler.charge',
      consumer: 'sample-e2e',
      state: 'running',
      totalErrors: 0,
    });
    expect(loop(view, 'shipping').handler).toBe('ShippingHandler.pack');
    expect(view.ledger.charged).toBeGreaterThanOrEqual(1);
    expect(view.failureRate).toBe(0);
    expect(loop(view, 'billing').inspection).toMatchObject({ lag: 0, deadLetters: 0 });

    // prom-client's default registry: the module's metrics (the `metrics` option) beside Node's
    const metrics = await fetch(`${base}/metrics`);
    expect(metrics.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await metrics.text();
    expect(text).toMatch(
      /^echo_stream_acked_total\{stream="orders",group="billing",consumer="sample-e2e",handler="OrdersHandler.charge"\} [1-9]\d*$/m,
    );
    expect(text).toContain('# TYPE echo_stream_acked_total counter\n');
    expect(text).toMatch(/^echo_stream_up\{stream="orders",group="shipping",.*\} 1$/m);
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(text).toMatch(/^nodejs_heap_size_used_bytes \d/m);
    // /stats inspected both groups just now: their group gauges are in the scrape
    expect(text).toMatch(/^echo_stream_lag\{stream="orders",group="billing",.*\} 0$/m);
  });

  it('answers 400 to an invalid order and writes nothing', async () => {
    const before = await redis.xlen('orders');
    for (const body of [{ sku: 'A-1' }, { sku: '', qty: 1 }, { sku: 'A-1', qty: 1.5 }, [1]]) {
      const res = await publish(body as Record<string, unknown>);
      expect(res.status).toBe(400);
    }
    expect(await redis.xlen('orders')).toBe(before);
  });

  it('a malformed order published as-is ends as a rejected dead letter with the failed rules', async () => {
    const res = await fetch(`${base}/orders/unchecked`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ sku: '', qty: 'two' }),
    });
    expect(res.status).toBe(202);
    const { entryId } = (await res.json()) as { entryId: string };
    const view = await waitFor(
      async () => {
        const v = await stats();
        return v.deadLetters.recent.some((d) => d.entryId === entryId) ? v : null;
      },
      { message: 'the malformed order shows as a dead letter in /stats' },
    ).then((v) => v!);
    const letter = view.deadLetters.recent.find((d) => d.entryId === entryId)!;
    expect(letter).toMatchObject({ reason: 'rejected', group: 'billing', attempts: 1 });
    expect(letter.error).toContain('sku must be longer than or equal to 1 characters');
    expect(letter.error).toContain('qty must be an integer number');
  });
});

describeWithChromium('sample live page in headless Chromium', () => {
  let browser: Browser | undefined;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1400, height: 760 } });
    page.on('pageerror', (err) => pageErrors.push(err.message));
    page.on('console', (msg) => {
      if (msg.type() === 'error') pageErrors.push(msg.text());
    });
  });

  afterAll(async () => {
    await browser?.close();
  });

  const cell = (group: string, field: string) =>
    page.locator(`tr[data-loop="orders/${group}"] [data-field="${field}"]`);
  const count = async (group: string, field: string) =>
    Number((await cell(group, field).textContent())?.replace(/,/g, '') ?? NaN);

  it('shows each loop and its figures move as orders flow', async () => {
    await page.goto(`${base}/`);
    await expect(page.title()).resolves.toBe('nestjs-echo-stream sample');
    await page.waitForSelector('#status.live', { timeout: 10_000 });
    await waitFor(async () => (await page.locator('tr[data-loop]').count()) === 2, {
      message: 'the page shows the two loops',
    });
    expect(await cell('billing', 'state').textContent()).toBe('running');
    expect(await cell('shipping', 'state').textContent()).toBe('running');

    const ackedBefore = await count('billing', 'totalAcked');
    const chargedBefore = Number(await page.locator('#sum-charged').textContent());
    expect(Number.isFinite(ackedBefore)).toBe(true);

    for (let i = 0; i < 10; i++)
      expect((await publish({ sku: 'B-7', qty: 1 + i })).status).toBe(202);

    // The page polls /stats every second: the figures it shows must move by themselves.
    await waitFor(async () => (await count('billing', 'totalAcked')) >= ackedBefore + 10, {
      message: 'the page shows billing acked the 10 orders',
    });
    await waitFor(async () => (await count('shipping', 'totalAcked')) >= 11, {
      message: 'the page shows shipping acked the 11 orders',
    });
    expect(Number(await page.locator('#sum-charged').textContent())).toBe(chargedBefore + 10);
    expect(Number(await cell('billing', 'tpsOut').textContent())).toBeGreaterThan(0);
    expect(await count('billing', 'pending')).toBe(0);

    // An undecodable entry from a foreign producer: dead-lettered at once, in both groups.
    const dlqBefore = await count('billing', 'totalDlq');
    await redis.xadd('orders', '*', 'id', 'bad-1', 'data', '{not json');
    await waitFor(
      async () =>
        (await count('billing', 'deadLetters')) >= 1 &&
        (await page.locator('#dead tbody td', { hasText: /^bad-1$/ }).count()) === 2,
      { message: 'the page shows the dead letter of bad-1 (both groups) and the DLQ length' },
    );
    expect(await count('billing', 'totalDlq')).toBe(dlqBefore + 1);
    expect(await page.locator('#dead tbody').textContent()).toContain('decode_error');

    // The page's own "Publish 20" button goes through POST /orders too.
    const ackedNow = await count('billing', 'totalAcked');
    await page.click('#publish-many');
    await waitFor(async () => (await count('billing', 'totalAcked')) >= ackedNow + 20, {
      timeoutMs: 10_000,
      message: 'the page shows the 20 orders published by its button as acked',
    });

    if (process.env.SAMPLE_PAGE_SCREENSHOT) {
      await page.screenshot({ path: process.env.SAMPLE_PAGE_SCREENSHOT, fullPage: true });
    }
    expect(pageErrors).toEqual([]);
  });
});

reportSkippedWithoutChromium('sample-page.e2e');
