/**
 * The sample HTTP app (sample/) in-process against a throw-away redis-server: its endpoints, its
 * page in headless Chromium (Debian's `chromium` package; `CHROMIUM_BIN` may point at another
 * binary), and the library's dashboard as the sample mounts it, which is where the sample sends
 * operators for the consumer loops and the ledger's partitions. Without Chromium the page test is
 * skipped with one line saying so; the HTTP tests still run. SAMPLE_PAGE_SCREENSHOT=<file.png>
 * saves a screenshot of the page. Two instances sharing the ledger: sample-ledger.e2e.spec.ts.
 */
import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Browser, Page } from 'playwright-core';
import { Redis } from 'ioredis';
import { partitionOf } from '../../lib';
import type { DeadLetterPageView, GroupView, OverviewView } from '../../lib';
import { AppModule } from '../../sample/app.module';
import { SampleConfig } from '../../sample/config';
import type { SampleSummary } from '../../sample/stats/sample-summary.service';
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

/** The sample's summary, the JSON behind its page. */
async function summary(): Promise<SampleSummary> {
  const res = await fetch(`${base}/stats`);
  expect(res.status).toBe(200);
  return (await res.json()) as SampleSummary;
}

async function postMovement(movement: Record<string, unknown>): Promise<Response> {
  return fetch(`${base}/ledger/movements`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(movement),
  });
}

/** A JSON answer of the dashboard's API, as the sample mounts it. */
async function dashboardApi<T>(route: string): Promise<T> {
  const res = await fetch(`${base}/echo-stream/api/${route}`);
  expect(res.status).toBe(200);
  return (await res.json()) as T;
}

/** The dashboard's row of orders/<group>. */
async function ordersGroup(group: string): Promise<GroupView> {
  const overview = await dashboardApi<OverviewView>('overview');
  const found = overview.streams
    .find((s) => s.stream === 'orders')
    ?.groups.find((g) => g.group === group);
  if (!found) throw new Error(`no group orders/${group} in the dashboard's overview`);
  return found;
}

describe('sample app over HTTP', () => {
  it('publishes on POST /orders; the summary counts the charge, the dashboard shows both groups done, /metrics counts it', async () => {
    const res = await publish({ sku: 'A-1', qty: 2 });
    expect(res.status).toBe(202);
    const receipt = (await res.json()) as { id: string; entryId: string };
    expect(receipt.id).toMatch(/^[0-9a-z]{24}$/);
    expect(receipt.entryId).toMatch(/^\d+-\d+$/);

    const view = await waitFor(
      async () => {
        const v = await summary();
        return v.billing.charged >= 1 ? v : null;
      },
      { message: 'billing charges the order' },
    ).then((v) => v!);
    expect(view).toMatchObject({ failureRate: 0, dashboard: '/echo-stream' });
    expect(view.billing.duplicates).toBe(0);

    // The loops are the dashboard's to show: both groups read the order (lag 0) and acked it
    // (nothing pending), each run by this app's loop under the sample's consumer name.
    await waitFor(
      async () => {
        const [billing, shipping] = [await ordersGroup('billing'), await ordersGroup('shipping')];
        return [billing, shipping].every((g) => g.lag === 0 && g.pending === 0);
      },
      { message: 'the dashboard shows billing and shipping done with the order' },
    );
    const billing = await ordersGroup('billing');
    expect(billing).toMatchObject({
      handler: 'OrdersHandler.charge',
      state: 'running',
      pending: 0,
      lag: 0,
      deadLetters: 0,
    });
    expect(billing.consumers.map((c) => c.name)).toEqual(['sample-e2e']);
    expect(await ordersGroup('shipping')).toMatchObject({
      handler: 'ShippingHandler.pack',
      state: 'running',
    });

    // prom-client's default registry: the module's metrics (the `metrics` option) beside Node's
    const metrics = await fetch(`${base}/metrics`);
    expect(metrics.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await metrics.text();
    expect(text).toMatch(
      /^echo_stream_acked_total\{stream="orders",group="billing",consumer="sample-e2e",handler="OrdersHandler.charge"\} [1-9]\d*$/m,
    );
    expect(text).toMatch(
      /^echo_stream_acked_total\{stream="orders",group="shipping",consumer="sample-e2e",handler="ShippingHandler.pack"\} [1-9]\d*$/m,
    );
    expect(text).toMatch(
      /^echo_stream_handler_errors_total\{stream="orders",group="billing",.*\} 0$/m,
    );
    expect(text).toContain('# TYPE echo_stream_acked_total counter\n');
    expect(text).toMatch(/^echo_stream_up\{stream="orders",group="shipping",.*\} 1$/m);
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(text).toMatch(/^nodejs_heap_size_used_bytes \d/m);
    // the dashboard's overview inspected both groups just now: their group gauges are in the scrape
    expect(text).toMatch(/^echo_stream_lag\{stream="orders",group="billing",.*\} 0$/m);
  });

  it('an order posted twice under its id is charged once: billing and shipping skip the copy (dedup)', async () => {
    const before = await summary();
    const order = { id: 'co-e2e-twice', sku: 'C-3', qty: 2 };
    const first = (await (await publish(order)).json()) as { id: string; entryId: string };
    expect(first.id).toBe('co-e2e-twice');
    const settled = async () => {
      const [billing, shipping] = [await ordersGroup('billing'), await ordersGroup('shipping')];
      return [billing, shipping].every((g) => g.lag === 0 && g.pending === 0);
    };
    // acked by both groups (the dedup record is written with the XACK)
    await waitFor(settled, { message: 'both groups acked the order' });
    expect((await summary()).billing.charged).toBe(before.billing.charged + 1);

    // the checkout timed out and posts it again: a plain publish writes the copy ...
    const again = (await (await publish(order)).json()) as { id: string; entryId: string };
    expect(again.id).toBe('co-e2e-twice');
    expect(again.entryId).not.toBe(first.entryId);
    // ... which both groups ack without calling their handler
    await waitFor(async () => (await settled()) && (await summary()).billing.duplicates === 1, {
      message: 'billing skipped the copy',
    });
    expect((await summary()).billing.charged).toBe(before.billing.charged + 1);
    expect(await ordersGroup('billing')).toMatchObject({ totalDuplicates: 1, pending: 0 });
    expect(await ordersGroup('shipping')).toMatchObject({ totalDuplicates: 1, pending: 0 });
  });

  it('answers 400 to an invalid order and writes nothing', async () => {
    const before = await redis.xlen('orders');
    for (const body of [
      { sku: 'A-1' },
      { sku: '', qty: 1 },
      { sku: 'A-1', qty: 1.5 },
      { sku: 'A-1', qty: 1, id: '' },
      { sku: 'A-1', qty: 1, id: 'co 1<b>' },
      [1],
    ]) {
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
        const v = await summary();
        return v.deadLetters.recent.some((d) => d.entryId === entryId) ? v : null;
      },
      { message: 'the malformed order shows as a dead letter in the orders summary' },
    ).then((v) => v!);
    const letter = view.deadLetters.recent.find((d) => d.entryId === entryId)!;
    expect(letter).toMatchObject({ reason: 'rejected', group: 'billing', attempts: 1 });
    expect(letter.error).toContain('sku must be longer than or equal to 1 characters');
    expect(letter.error).toContain('qty must be an integer number');

    // the same letter on the dead-letter stream, as the dashboard (where operators redrive) lists it
    const page = await dashboardApi<DeadLetterPageView>('streams/orders/dead-letters?count=1000');
    const copy = page.entries.find((d) => d.sourceEntryId === entryId);
    expect(copy).toMatchObject({ reason: 'rejected', group: 'billing', attempts: 1 });
    expect(copy!.error).toContain('qty must be an integer number');
  });
});

describeWithChromium(
  'sample orders page and the dashboard it links to, in headless Chromium',
  () => {
    let browser: Browser | undefined;
    let page: Page;
    const pageErrors: string[] = [];
    const failedRequests: string[] = [];
    /**
     * A known gap of the dashboard, left to the branch that makes a partitioned stream one stream
     * in every view (issue 31): it selects the first group, ledger/balances, whose PEL request
     * answers 404 ("stream 'ledger' has no group 'balances'"). Allowed here, and only this one.
     */
    const KNOWN_404 = '/echo-stream/api/streams/ledger/groups/balances/pending';
    /** The page errors, without the console line of each known 404. */
    const unexpectedErrors = () => {
      let known = failedRequests.filter((path) => path === KNOWN_404).length;
      expect(failedRequests.filter((path) => path !== KNOWN_404)).toEqual([]);
      return pageErrors.filter((e) => !(known > 0 && e.includes('status of 404') && known--));
    };

    beforeAll(async () => {
      const { chromium } = await import('playwright-core');
      browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
      page = await browser.newPage({ viewport: { width: 1400, height: 760 } });
      page.on('pageerror', (err) => pageErrors.push(err.message));
      page.on('response', (res) => {
        if (res.status() >= 400) failedRequests.push(new URL(res.url()).pathname);
      });
      page.on('console', (msg) => {
        if (msg.type() === 'error') pageErrors.push(msg.text());
      });
    });

    afterAll(async () => {
      await browser?.close();
    });

    const tile = async (id: string) =>
      Number((await page.locator(`#${id}`).textContent())?.replace(/,/g, '') ?? NaN);
    const deadRows = (text: string) => page.locator('#dead tbody tr', { hasText: text });

    it('shows the orders as they are charged, skipped and dead-lettered, within the window', async () => {
      await page.goto(`${base}/`);
      await expect(page.title()).resolves.toBe('nestjs-echo-stream sample');
      await page.waitForSelector('#status.live', { timeout: 10_000 });
      const chargedBefore = await tile('sum-charged');
      const duplicatesBefore = await tile('sum-duplicates');
      expect(Number.isFinite(chargedBefore)).toBe(true);

      for (let i = 0; i < 10; i++)
        expect((await publish({ sku: 'B-7', qty: 1 + i })).status).toBe(202);

      // The page polls /stats every second: the figures it shows must move by themselves.
      await waitFor(async () => (await tile('sum-charged')) === chargedBefore + 10, {
        message: 'the page shows the 10 orders charged',
      });
      expect(await tile('sum-duplicates')).toBe(duplicatesBefore);
      expect(await page.locator('#sum-failure').textContent()).toBe('0');

      // "Publish twice": one order id posted again 1.5 s later: charged once, the copy skipped
      await page.click('#publish-twice');
      await waitFor(async () => (await tile('sum-duplicates')) === duplicatesBefore + 1, {
        timeoutMs: 10_000,
        message: 'the page shows the copy skipped',
      });
      expect(await tile('sum-charged')).toBe(chargedBefore + 11);

      // An undecodable entry from a foreign producer: dead-lettered at once, in both groups.
      const deadBefore = await tile('sum-dead');
      await redis.xadd('orders', '*', 'id', 'bad-1', 'data', '{not json');
      await waitFor(async () => (await deadRows('bad-1').count()) === 2, {
        message: 'the page shows the dead letter of bad-1, once per group',
      });
      expect(await tile('sum-dead')).toBe(deadBefore + 2);
      expect(await deadRows('bad-1').first().textContent()).toContain('decode_error');
      expect(await deadRows('bad-1').allTextContents()).toEqual(
        expect.arrayContaining([
          expect.stringContaining('billing'),
          expect.stringContaining('shipping'),
        ]),
      );

      // The page's own "Publish 20" button goes through POST /orders too.
      const chargedNow = await tile('sum-charged');
      await page.click('#publish-many');
      await waitFor(async () => (await tile('sum-charged')) === chargedNow + 20, {
        timeoutMs: 10_000,
        message: 'the page shows the 20 orders published by its button as charged',
      });

      // The ledger: each account's movements applied in its order, balances in the table
      for (const account of ['acct-7', 'acct-8']) {
        for (let seq = 1; seq <= 4; seq++) {
          const res = await postMovement({ account, seq, amount: seq % 2 ? 12_50 : -2_25 });
          expect(res.status).toBe(202);
        }
      }
      const balanceRow = (account: string) =>
        page.locator(`#balances tr[data-account="${account}"] td`);
      // the accounts sit on different partitions: each is applied in its own time
      for (const account of ['acct-7', 'acct-8']) {
        await waitFor(async () => (await balanceRow(account).allTextContents()).length === 4, {
          message: `the page shows the balance of ${account}`,
        });
        await waitFor(async () => (await balanceRow(account).nth(2).textContent()) === '4', {
          message: `the page shows the 4 movements of ${account} applied`,
        });
      }
      expect(await balanceRow('acct-7').allTextContents()).toEqual([
        'acct-7',
        String(partitionOf('acct-7', 4)),
        '4',
        '20.50',
      ]);
      expect(await page.locator('#sum-violations').textContent()).toBe('0');
      expect(await page.locator('#tile-violations').getAttribute('class')).toBe('tile good');
      expect(await page.locator('#sum-owned').textContent()).toBe('0, 1, 2, 3');

      // Nothing wider than the window (the page this one replaced overflowed 1,400 px).
      const widths = (await page.evaluate(
        '({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })',
      )) as { scroll: number; client: number };
      expect(widths.scroll).toBeLessThanOrEqual(widths.client);

      if (process.env.SAMPLE_PAGE_SCREENSHOT) {
        await page.screenshot({ path: process.env.SAMPLE_PAGE_SCREENSHOT, fullPage: true });
      }
      expect(pageErrors).toEqual([]);
    });

    it('sends operators to the dashboard: the orders groups, their skips and dead letters, the ledger partitions', async () => {
      await page.goto(`${base}/`);
      await page.waitForSelector('#status.live', { timeout: 10_000 });
      await page.click('#dashboard-link');
      await page.waitForURL(`${base}/echo-stream`);
      const cell = (group: string, field: string) =>
        page.locator(`tr[data-group="orders/${group}"] [data-field="${field}"]`);
      await waitFor(
        async () =>
          (await cell('billing', 'state').textContent()) === 'running' &&
          (await cell('shipping', 'state').textContent()) === 'running',
        { message: 'the dashboard shows the loops of billing and shipping running' },
      );
      // bad-1 (above) was dead-lettered by both groups; nothing of the orders stays pending
      await waitFor(
        async () =>
          Number(await cell('billing', 'deadLetters').textContent()) >= 1 &&
          Number(await cell('shipping', 'deadLetters').textContent()) >= 1 &&
          (await cell('billing', 'pending').textContent()) === '0' &&
          (await cell('shipping', 'pending').textContent()) === '0',
        { message: 'the dashboard shows the dead letters and nothing pending' },
      );
      // the copies skipped by dedup (above), in the Skipped column
      expect(Number(await cell('billing', 'duplicates').textContent())).toBeGreaterThanOrEqual(2);
      expect(Number(await cell('shipping', 'duplicates').textContent())).toBeGreaterThanOrEqual(2);
      // the partitioned ledger: its group, with the owner of each partition
      const ledger = (field: string) =>
        page.locator(`tr[data-group="ledger/balances"] [data-field="${field}"]`);
      await waitFor(async () => (await ledger('state').textContent()) === 'running', {
        message: 'the dashboard shows the loop of ledger/balances running',
      });
      expect(await ledger('consumers').textContent()).toBe('sample-e2e [0,1,2,3]');
      expect(unexpectedErrors()).toEqual([]);
    });
  },
);

reportSkippedWithoutChromium('sample-page.e2e');
