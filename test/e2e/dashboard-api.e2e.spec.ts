/**
 * The dashboard's JSON API (docs/operations.md "Dashboard") on the Express AND the Fastify adapter, against a real
 * redis-server: what each route shows matches what Redis holds, mutations change exactly what
 * they say, and every refusal (read-only, cross-origin, guard, bad input) changes nothing.
 */
import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { OverviewView } from '../../lib';
import {
  DASHBOARD_STREAM,
  KeyGuard,
  seedDashboardStream,
  startDashboardApp,
  type AdapterName,
} from '../fixtures/dashboard.app';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

const DLQ = `${DASHBOARD_STREAM}:dlq`;
const KEY = { 'x-dashboard-key': 'let-me-in' };
const GOOD = 120;

afterAll(async () => {
  await stopAllRedisServers();
});

describe.each<AdapterName>(['express', 'fastify'])('dashboard API on %s', (adapter) => {
  let server: RedisServer;
  let redis: Redis;
  let rw: { app: INestApplication; base: string };
  let ro: { app: INestApplication; base: string };
  let pendingIds: string[];

  beforeAll(async () => {
    server = await RedisServer.start();
    redis = server.client();
    rw = await startDashboardApp(server.url, adapter, 'dash-rw', {
      readOnly: false,
      guards: [KeyGuard],
      streams: ['not-there-yet'],
    });
    ro = await startDashboardApp(server.url, adapter, 'dash-ro', { path: '/ops/streams' });
    await waitFor(async () => (await redis.xinfo('GROUPS', DASHBOARD_STREAM)) as unknown[], {
      message: 'the billing group exists',
    });
    ({ pendingIds } = await seedDashboardStream(redis, GOOD));
    await waitFor(async () => (await redis.xlen(DLQ)) === 2, {
      message: 'billing dead-letters both undecodable entries',
    });
  });

  afterAll(async () => {
    await rw?.app.close();
    await ro?.app.close();
    await server?.stop();
  });

  const get = (path: string, headers: Record<string, string> = KEY, base = rw.base) =>
    fetch(`${base}${path}`, { headers });
  const getJson = async <T>(path: string): Promise<T> => {
    const res = await get(path);
    expect(res.status).toBe(200);
    return (await res.json()) as T;
  };
  const post = (
    path: string,
    body: unknown,
    headers: Record<string, string> = {},
    base = rw.base,
  ) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: base, ...KEY, ...headers },
      body: JSON.stringify(body),
    });
  const api = `/echo-stream/api/streams/${DASHBOARD_STREAM}`;

  type Overview = OverviewView;

  it('overview: every group with state, lag, pending, oldest pending, dead letters', async () => {
    const total = await redis.xlen(DASHBOARD_STREAM);
    const view = await getJson<Overview>('/echo-stream/api/overview');
    expect(view.readOnly).toBe(false);
    // the handlers' streams and the `streams` option's, sorted by name
    expect(view.streams.map((s) => s.stream)).toEqual(['not-there-yet', DASHBOARD_STREAM]);
    const [missing, payments] = view.streams;
    expect(payments.length).toBe(total);
    expect(payments.deadLetters).toBe(2);
    expect(missing).toMatchObject({ length: 0, groups: [], deadLetters: 0 });

    const group = (name: string) => payments.groups.find((g) => g.group === name)!;
    expect(group('billing')).toMatchObject({
      state: 'running',
      handler: 'PaymentsHandler.charge',
      pending: 0,
      lag: 0,
      oldestPendingMs: null,
      deadLetters: 2,
    });
    expect(typeof group('billing').tpsOut).toBe('number');
    expect(group('billing').sparkline.tpsOut.length).toBeGreaterThanOrEqual(1);
    expect(group('reporting')).toMatchObject({ state: null, lag: total, pending: 0, tpsIn: null });
    expect(group('audit')).toMatchObject({ state: null, lag: 0, pending: pendingIds.length });
    expect(group('audit').consumers).toEqual([
      expect.objectContaining({ name: 'stuck-worker', pending: pendingIds.length }),
    ]);
    expect(group('audit').oldestPendingMs).toBeGreaterThanOrEqual(0);
  });

  it('overview: rates of groups the app does not consume, from the server counters', async () => {
    const group = async (name: string) =>
      (await getJson<Overview>('/echo-stream/api/overview')).streams
        .find((st) => st.stream === DASHBOARD_STREAM)!
        .groups.find((g) => g.group === name)!;
    await group('reporting'); // a first reading of the counters
    const pipeline = redis.pipeline();
    for (let i = 0; i < 10; i++)
      pipeline.xadd(DASHBOARD_STREAM, '*', 'id', `rate-${i}`, 'data', '{}');
    await pipeline.exec();
    await redis.xreadgroup(
      'GROUP',
      'audit',
      'stuck-worker',
      'COUNT',
      4,
      'STREAMS',
      DASHBOARD_STREAM,
      '>',
    );
    // the PEL later tests page through
    pendingIds = (await redis.xpending(DASHBOARD_STREAM, 'audit', '-', '+', 100_000)).map(
      (row) => (row as [string])[0],
    );
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const reporting = await group('reporting');
    const audit = await group('audit');
    // 10 entries added within the (>= 1 s) window, none delivered to reporting, 4 to audit
    expect(reporting.tpsIn).toBeGreaterThan(0);
    expect(reporting.tpsIn).toBeLessThanOrEqual(10);
    expect(reporting.tpsOut).toBe(0);
    expect(audit.tpsOut).toBeGreaterThan(0);
    expect(audit.tpsOut).toBeLessThanOrEqual(4);
    expect(reporting.sparkline.tpsIn.length).toBeGreaterThanOrEqual(1);
  });

  it('pending: pages through the PEL, never repeating or skipping an entry', async () => {
    type Page = {
      pending: number;
      next: string | null;
      entries: Array<{ entryId: string; consumer: string; deliveries: number; preview: string }>;
    };
    const seen: string[] = [];
    let after: string | null = null;
    let pages = 0;
    do {
      const page: Page = await getJson<Page>(
        `${api}/groups/audit/pending?count=50${after ? `&after=${after}` : ''}`,
      );
      expect(page.pending).toBe(pendingIds.length);
      expect(page.entries.length).toBeLessThanOrEqual(50);
      for (const e of page.entries) {
        expect(e).toMatchObject({ consumer: 'stuck-worker', deliveries: 1 });
        seen.push(e.entryId);
      }
      after = page.next;
      pages++;
    } while (after !== null && pages < 10);
    expect(seen).toEqual(pendingIds);
    expect(pages).toBe(Math.ceil(pendingIds.length / 50));
    const first = await getJson<Page>(`${api}/groups/audit/pending?count=1`);
    expect(first.entries[0].preview).toBe('id=pay-0 data={"n":0}');
  });

  it('entries: the tail, newest first, paged towards older entries', async () => {
    type Page = {
      length: number;
      next: string;
      entries: Array<{ entryId: string; preview: string }>;
    };
    const newest = (await redis.xrevrange(DASHBOARD_STREAM, '+', '-', 'COUNT', 4)).map(
      ([id]) => id,
    );
    const page1 = await getJson<Page>(`${api}/entries?count=2`);
    const page2 = await getJson<Page>(`${api}/entries?count=2&after=${page1.next}`);
    expect([...page1.entries, ...page2.entries].map((e) => e.entryId)).toEqual(newest);
    expect(page1.length).toBe(await redis.xlen(DASHBOARD_STREAM));
  });

  it('dead letters: reason, error, attempts; redrive one moves it back; delete removes one', async () => {
    type Page = {
      entries: Array<{
        entryId: string;
        reason: string;
        error: string | null;
        attempts: number;
        group: string;
        preview: string;
      }>;
    };
    const letters = (await getJson<Page>(`${api}/dead-letters`)).entries;
    expect(letters).toHaveLength(2);
    for (const letter of letters) {
      expect(letter).toMatchObject({ reason: 'decode_error', group: 'billing', attempts: 1 });
      expect(letter.error).toMatch(/JSON/);
    }
    expect(letters[0].preview).toContain('id=bad-0');
    const firstPage = await getJson<Page & { next: string }>(`${api}/dead-letters?count=1`);
    expect(firstPage.entries.map((l) => l.entryId)).toEqual([letters[0].entryId]);
    const secondPage = await getJson<Page>(`${api}/dead-letters?count=1&after=${firstPage.next}`);
    expect(secondPage.entries.map((l) => l.entryId)).toEqual([letters[1].entryId]);

    const lengthBefore = await redis.xlen(DASHBOARD_STREAM);
    const res = await post(`${api}/dead-letters/redrive`, { entryIds: [letters[0].entryId] });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ stream: DASHBOARD_STREAM, redriven: 1 });
    // copied back to the source stream with its original fields, and only that one letter left
    const [last] = await redis.xrevrange(DASHBOARD_STREAM, '+', '-', 'COUNT', 1);
    expect(last[1].slice(0, 2)).toEqual(['id', 'bad-0']);
    expect(await redis.xlen(DASHBOARD_STREAM)).toBe(lengthBefore + 1);
    // billing dead-letters it again (still undecodable): the DLQ holds two letters again
    await waitFor(async () => (await redis.xlen(DLQ)) === 2, { message: 'dead-lettered again' });
    const ids = (await redis.xrange(DLQ, '-', '+')).map(([id]) => id);
    expect(ids).not.toContain(letters[0].entryId);

    const del = await post(`${api}/dead-letters/delete`, { entryIds: [ids[0], '1-1'] });
    expect(del.status).toBe(200);
    expect(await del.json()).toEqual({ stream: DASHBOARD_STREAM, deleted: [ids[0]] });
    expect((await redis.xrange(DLQ, '-', '+')).map(([id]) => id)).toEqual([ids[1]]);
  });

  it('read-only mode: every mutating route answers 403 and changes nothing', async () => {
    const before = await redis.xrange(DLQ, '-', '+');
    const roApi = `/ops/streams/api/streams/${DASHBOARD_STREAM}`;
    const ids = before.map(([id]) => id);
    for (const [path, body] of [
      ['dead-letters/redrive', {}],
      ['dead-letters/redrive', { entryIds: ids }],
      ['dead-letters/delete', { entryIds: ids }],
    ] as const) {
      const res = await post(`${roApi}/${path}`, body, {}, ro.base);
      expect(res.status).toBe(403);
      expect(((await res.json()) as { message: string }).message).toMatch(/read-only/);
    }
    const overview = await get('/ops/streams/api/overview', {}, ro.base);
    expect(((await overview.json()) as Overview).readOnly).toBe(true);
    expect(await redis.xrange(DLQ, '-', '+')).toEqual(before);
  });

  it('refuses cross-origin and non-JSON mutations', async () => {
    const before = await redis.xrange(DLQ, '-', '+');
    const refusals: Array<[Record<string, string>, number]> = [
      [{ origin: 'http://evil.example' }, 403],
      [{ origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' }, 403],
      [{ 'sec-fetch-site': 'same-site' }, 403],
      [{ origin: '' }, 403],
    ];
    for (const [headers, status] of refusals) {
      const res = await post(`${api}/dead-letters/redrive`, {}, headers);
      expect(res.status).toBe(status);
    }
    const form = await fetch(`${rw.base}${api}/dead-letters/redrive`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', origin: rw.base, ...KEY },
      body: '{}',
    });
    expect(form.status).toBe(415);
    expect(await redis.xrange(DLQ, '-', '+')).toEqual(before);
  });

  it('a guard that denies blocks the page, the assets and the API', async () => {
    const before = await redis.xrange(DLQ, '-', '+');
    for (const path of [
      '/echo-stream',
      '/echo-stream/assets/dashboard.js',
      '/echo-stream/api/overview',
      `${api}/groups/audit/pending`,
      `${api}/dead-letters`,
      `${api}/entries`,
    ]) {
      expect((await get(path, {})).status).toBe(403);
      expect((await get(path, { 'x-dashboard-key': 'wrong' })).status).toBe(403);
    }
    const res = await post(`${api}/dead-letters/redrive`, {}, { 'x-dashboard-key': 'nope' });
    expect(res.status).toBe(403);
    expect(await redis.xrange(DLQ, '-', '+')).toEqual(before);
  });

  it('bad input gets a 400 (404 for an unknown group) with a message', async () => {
    const cases: Array<[string, number, RegExp]> = [
      ['/echo-stream/api/streams/secret-stream/entries', 400, /unknown stream 'secret-stream'/],
      ['/echo-stream/api/streams/secret-stream/dead-letters', 400, /unknown stream/],
      [`${api}/entries?count=-1`, 400, /count must be an integer from 1 to 1000/],
      [`${api}/entries?count=100000000`, 400, /count must be an integer/],
      [`${api}/entries?count=abc`, 400, /count/],
      [`${api}/groups/audit/pending?after=abc`, 400, /after must be a stream entry id/],
      [`${api}/groups/nobody/pending`, 404, /no group 'nobody'/],
      // ids Redis would reject: beyond 64 bits, or a bound it cannot step past
      [`${api}/entries?after=18446744073709551616-0`, 400, /^after must be a stream entry id/],
      [`${api}/dead-letters?after=1-18446744073709551616`, 400, /^after must be/],
      [`${api}/groups/audit/pending?after=99999999999999999999-0`, 400, /^after must be/],
      [`${api}/entries?after=0-0`, 400, /^after: /],
      [
        `${api}/groups/audit/pending?after=18446744073709551615-18446744073709551615`,
        400,
        /^after: /,
      ],
      [`${api}/dead-letters?after=18446744073709551615-18446744073709551615`, 400, /^after: /],
    ];
    for (const [path, status, message] of cases) {
      const res = await get(path);
      expect([path, res.status]).toEqual([path, status]);
      expect(((await res.json()) as { message: string }).message).toMatch(message);
    }
    const before = await redis.xrange(DLQ, '-', '+');
    const bodies: Array<[string, unknown, RegExp]> = [
      ['redrive', { count: -1 }, /count must be an integer/],
      ['redrive', { count: 10_000_000 }, /count must be an integer/],
      ['redrive', { entryIds: ['x'] }, /stream entry id/],
      ['redrive', { entryIds: ['18446744073709551616-0'] }, /stream entry id/],
      ['delete', { entryIds: ['1-18446744073709551616'] }, /stream entry id/],
      ['redrive', { group: '' }, /group must be a name/],
      ['redrive', { stream: 'other' }, /unknown field 'stream'/],
      ['redrive', [1], /JSON object/],
      ['delete', {}, /entryIds is required/],
      ['delete', { entryIds: [] }, /entryIds must be an array of 1 to 1000/],
    ];
    for (const [path, body, message] of bodies) {
      const res = await post(`${api}/dead-letters/${path}`, body);
      expect([path, body, res.status]).toEqual([path, body, 400]);
      expect(((await res.json()) as { message: string }).message).toMatch(message);
    }
    const unknown = await post('/echo-stream/api/streams/secret-stream/dead-letters/redrive', {});
    expect(unknown.status).toBe(400);
    expect(await redis.xrange(DLQ, '-', '+')).toEqual(before);
  });

  it('serves a self-contained page under a strict CSP', async () => {
    const res = await get('/echo-stream');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-security-policy')).toMatch(/^default-src 'self'/);
    const html = await res.text();
    // every script is a file of the dashboard; no inline script, no remote URL
    expect(html.match(/<script[^>]*>/g)).toEqual([
      '<script src="/echo-stream/assets/dashboard.js" defer>',
    ]);
    expect(html).not.toMatch(/https?:\/\//);
    const js = await get('/echo-stream/assets/dashboard.js');
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(await js.text()).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
    const api = await get('/echo-stream/api/overview');
    expect(api.headers.get('content-security-policy')).toMatch(/^default-src 'self'/);
  });
});
