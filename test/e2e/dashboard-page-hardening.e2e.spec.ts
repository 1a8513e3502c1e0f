/**
 * The dashboard page's own safety, in headless Chromium against a real redis-server:
 * - invisible characters (bidirectional controls, zero-width marks) in names and values are
 *   shown as `\u202E` escapes, so `rtl\u202Egnp.exe` cannot pass for `rtlexe.png`;
 * - each group row shows the group's own dead letters, the stream row their total;
 * - the page's refresh never fetches a list it holds unchanged (only the overview), and fetches
 *   it again once the overview shows it changed;
 * - a single Redrive asks first: cancelled, nothing is sent and nothing moves.
 * Without Chromium the tests are skipped with one line saying so.
 */
import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { Browser, Page } from 'playwright-core';
import {
  PARCELS,
  SPOOF_CONSUMER,
  SPOOF_ERROR,
  SPOOF_GROUP,
  SPOOF_STREAM,
  startParcelsApp,
  type Parcel,
} from '../fixtures/parcels.app';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import {
  CHROMIUM,
  CHROMIUM_ARGS,
  hasChromium,
  reportSkippedWithoutChromium,
} from '../support/chromium';
import { sleep, waitFor } from '../support/wait-for';

const describeWithChromium = hasChromium ? describe : describe.skip;
const PARCELS_DLQ = `${PARCELS}:dlq`;
const SPOOF_DLQ = `${SPOOF_STREAM}:dlq`;
/** Any character the page must never draw raw. */
const RAW_INVISIBLE = /[\u061C\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/u;

/** A page with what it asked for recorded, and its dialogs answered as `answer` says. */
interface OpenPage {
  page: Page;
  requests: Array<{ method: string; path: string }>;
  dialogs: string[];
  answer: { accept: boolean };
  errors: string[];
}

describeWithChromium('dashboard page hardening in headless Chromium', () => {
  let server: RedisServer;
  let redis: Redis;
  let app: INestApplication;
  let base: string;
  let browser: Browser | undefined;
  const pages: Page[] = [];

  const publish = (stream: string, parcel: Parcel) =>
    redis.xadd(stream, '*', 'id', `parcel-${parcel.n}`, 'data', JSON.stringify(parcel));

  beforeAll(async () => {
    server = await RedisServer.start();
    redis = server.client();
    ({ app, base } = await startParcelsApp(server.url));
    await waitFor(
      async () =>
        ((await redis.xinfo('GROUPS', PARCELS)) as unknown[]).length === 2 &&
        ((await redis.xinfo('GROUPS', SPOOF_STREAM)) as unknown[]).length === 1,
      { message: 'the billing, shipping and spoof groups exist' },
    );
    // 8 dead letters of billing, 2 of shipping, 5 entries both take
    for (let n = 0; n < 15; n++) {
      await publish(PARCELS, {
        n,
        ...(n < 8 ? { failFor: 'billing' } : n < 10 ? { failFor: 'shipping' } : {}),
      });
    }
    await redis.xadd(SPOOF_STREAM, '*', 'id', 'spoof-1', 'data', '{"file":"rtl\u202Egnp.exe"}');
    await waitFor(
      async () => (await redis.xlen(PARCELS_DLQ)) === 10 && (await redis.xlen(SPOOF_DLQ)) === 1,
      { message: '10 dead letters of parcels and 1 of the spoof stream' },
    );
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await stopAllRedisServers();
  });

  async function openPage(): Promise<OpenPage> {
    const page = await browser!.newPage({ viewport: { width: 1400, height: 900 } });
    pages.push(page);
    const opened: OpenPage = {
      page,
      requests: [],
      dialogs: [],
      answer: { accept: false },
      errors: [],
    };
    page.on('request', (request) => {
      opened.requests.push({ method: request.method(), path: new URL(request.url()).pathname });
    });
    page.on('dialog', (dialog) => {
      opened.dialogs.push(dialog.message());
      void (opened.answer.accept ? dialog.accept() : dialog.dismiss());
    });
    page.on('pageerror', (err) => opened.errors.push(err.message));
    await page.goto(`${base}/echo-stream`);
    await page.waitForSelector('#status.live', { timeout: 10_000 });
    return opened;
  }

  const api = `/echo-stream/api/streams/`;
  const listRequests = (opened: OpenPage, list: 'pending' | 'dead-letters' | 'entries') =>
    opened.requests.filter(
      (r) => r.method === 'GET' && r.path.startsWith(api) && r.path.endsWith(`/${list}`),
    ).length;
  const overviews = (opened: OpenPage) =>
    opened.requests.filter((r) => r.path === '/echo-stream/api/overview').length;
  /** Resolves once the page asked for the overview `cycles` more times (its refresh ran). */
  async function refreshCycles(opened: OpenPage, cycles: number): Promise<void> {
    const target = overviews(opened) + cycles;
    await waitFor(() => overviews(opened) >= target, {
      timeoutMs: cycles * 2000 + 5000,
      message: `${cycles} refreshes of the page`,
    });
    await sleep(300); // the lists' turn of the last refresh
  }

  const groupRow = (page: Page, stream: string, group: string) =>
    page.locator(`tr[data-group="${stream}/${group}"]`);
  const streamRow = (page: Page, stream: string) =>
    page.locator(`tr.stream-row[data-stream="${stream}"]`);

  it('shows invisible characters in names, errors and payloads as \\u escapes, as text', async () => {
    const { page, errors } = await openPage();
    const nameCell = page.locator(`tr[data-stream="${SPOOF_STREAM}"] [data-field="stream"]`);
    await waitFor(async () => (await nameCell.count()) === 1, {
      message: 'the spoof stream has its row',
    });
    expect(await nameCell.textContent()).toBe('rtl\\u202Egnp.exe');
    const row = groupRow(page, SPOOF_STREAM, SPOOF_GROUP);
    expect(await row.locator('[data-field="group"]').textContent()).toBe('sp\\u200Bam');
    expect(await row.locator('[data-field="consumers"]').textContent()).toBe(
      'page\\u2066worker (0)',
    );
    expect(SPOOF_CONSUMER).toContain('\u2066');

    await row.locator('[data-field="group"]').click();
    await waitFor(async () => (await page.locator('#dead-letters tbody tr').count()) === 1, {
      message: 'the spoof stream dead letter is listed',
    });
    expect(await page.locator('#details-stream').textContent()).toBe('rtl\\u202Egnp.exe');
    expect(await page.locator('#pending-group').textContent()).toBe('sp\\u200Bam');
    const letter = page.locator('#dead-letters tbody tr').first();
    expect(SPOOF_ERROR).toMatch(RAW_INVISIBLE);
    expect(await letter.locator('[data-field="error"]').textContent()).toBe(
      'refused \\u202Egnp.exe (\\u2067ok\\u2069)',
    );
    expect(await letter.locator('[data-field="group"]').textContent()).toBe('sp\\u200Bam');
    expect(await letter.locator('td.payload').textContent()).toBe(
      'id=spoof-1 data={"file":"rtl\\u202Egnp.exe"}',
    );
    await waitFor(async () => (await page.locator('#tail tbody tr').count()) === 1, {
      message: 'the tail of the spoof stream is listed',
    });
    expect(await page.locator('#tail td.payload').first().textContent()).toContain(
      'rtl\\u202Egnp.exe',
    );
    // nowhere on the page is one drawn raw; each escape is text (a marked span), not markup
    expect(await page.locator('body').textContent()).not.toMatch(RAW_INVISIBLE);
    expect(await page.locator('main .invisible').count()).toBeGreaterThan(5);
    expect(await page.locator('main .invisible').first().innerHTML()).toMatch(/^\\u[0-9A-F]{4}$/);
    expect(errors).toEqual([]);
  });

  it("shows each group's own dead letters and the stream's total", async () => {
    const { page, errors } = await openPage();
    const total = streamRow(page, PARCELS).locator('[data-field="deadLetters"]');
    await waitFor(async () => (await total.count()) === 1, { message: 'the parcels row' });
    expect(await total.textContent()).toBe('10');
    await streamRow(page, PARCELS).locator('[data-field="stream"]').click();
    await waitFor(
      async () => (await page.locator('#dead-total').textContent()) === '(10 in total)',
      {
        message: 'the dead-letter panel of parcels says 10 in total',
      },
    );
    // NOTE: needs the server to count each group's own dead letters (GroupView.deadLetters)
    const own = (group: string) =>
      groupRow(page, PARCELS, group).locator('[data-field="deadLetters"]').textContent();
    expect(await own('billing')).toBe('8');
    expect(await own('shipping')).toBe('2');
    expect(errors).toEqual([]);
  });

  it('fetches each list once while nothing changes, and again once the overview shows a change', async () => {
    // the page opens on the first stream (parcels) and its first group, fetching its lists
    const opened = await openPage();
    const { page } = opened;
    await waitFor(async () => (await page.locator('#dead-letters tbody tr').count()) === 10, {
      message: 'the 10 dead letters of parcels are listed',
    });
    expect(await page.locator('#details-stream').textContent()).toBe(PARCELS);
    await refreshCycles(opened, 4);
    // four refreshes later, each list was still fetched once only
    expect(listRequests(opened, 'pending')).toBe(1);
    expect(listRequests(opened, 'dead-letters')).toBe(1);
    expect(listRequests(opened, 'entries')).toBe(1);

    // a new dead letter: the overview's count moves, the list is fetched again and shows it
    const before = listRequests(opened, 'dead-letters');
    await publish(PARCELS, { n: 100, failFor: 'billing' });
    await waitFor(async () => (await redis.xlen(PARCELS_DLQ)) === 11, {
      message: 'billing dead-letters parcel 100',
    });
    const [[letterId]] = await redis.xrevrange(PARCELS_DLQ, '+', '-', 'COUNT', 1);
    await waitFor(
      async () =>
        (await page.locator(`#dead-letters tr[data-entry-id="${letterId}"]`).count()) === 1,
      { timeoutMs: 6000, message: 'the page lists the new dead letter without a reload' },
    );
    expect(listRequests(opened, 'dead-letters')).toBeGreaterThan(before);
    expect(listRequests(opened, 'entries')).toBeGreaterThan(1); // the stream grew by one
    // and settles again: no list fetched while nothing changes
    await refreshCycles(opened, 1);
    const settled = opened.requests.length - overviews(opened);
    await refreshCycles(opened, 3);
    expect(opened.requests.length - overviews(opened)).toBe(settled);
    expect(opened.errors).toEqual([]);
  });

  it('asks before a single Redrive: cancelled, nothing is sent and nothing moves', async () => {
    const opened = await openPage();
    const { page } = opened;
    await page.locator(`tr[data-stream="${PARCELS}"] [data-field="stream"]`).first().click();
    const billingLetter = page.locator('#dead-letters tbody tr', {
      has: page.locator('td:nth-child(2)', { hasText: /^billing$/ }), // the Group column
    });
    await waitFor(async () => (await billingLetter.count()) > 0, {
      message: 'a billing dead letter is listed',
    });
    const letterId = (await billingLetter.first().getAttribute('data-entry-id'))!;
    const lengthBefore = await redis.xlen(PARCELS);
    const posts = () => opened.requests.filter((r) => r.method === 'POST').length;

    opened.answer.accept = false;
    await billingLetter.first().locator('button.redrive').click();
    await waitFor(() => opened.dialogs.length === 1, { message: 'the page asks' });
    expect(opened.dialogs[0]).toContain(letterId);
    expect(opened.dialogs[0]).toContain(PARCELS);
    await refreshCycles(opened, 1);
    expect(posts()).toBe(0);
    expect((await redis.xrange(PARCELS_DLQ, '-', '+')).map(([id]) => id)).toContain(letterId);
    expect(await redis.xlen(PARCELS)).toBe(lengthBefore);

    opened.answer.accept = true;
    await page.locator(`#dead-letters tr[data-entry-id="${letterId}"] button.redrive`).click();
    await waitFor(
      async () =>
        (await page.locator('#message').textContent()) ===
        `Redrove 1 dead letter(s) of ${PARCELS} (${letterId})`,
      { message: 'the page says it redrove the letter' },
    );
    expect(opened.dialogs).toHaveLength(2);
    expect(posts()).toBe(1);
    expect((await redis.xrange(PARCELS_DLQ, '-', '+')).map(([id]) => id)).not.toContain(letterId);
    expect(await redis.xlen(PARCELS)).toBe(lengthBefore + 1);
    expect(opened.errors).toEqual([]);
  });
});

reportSkippedWithoutChromium('dashboard-page-hardening.e2e');
