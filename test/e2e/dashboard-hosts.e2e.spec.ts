/**
 * The dashboard's front door on the Express AND the Fastify adapter (README "Dashboard",
 * Security): every answer under the mount path carries the security headers, refusals included;
 * a `Host` that `allowedHosts` does not list gets a 421 and no data on every route (what stops a
 * DNS-rebinding page, which forges `Origin` and `Sec-Fetch-Site` too); a mutation needs an
 * `Origin` that is allowed and is the request's own host. Requests are sent with node:http so the
 * test can write the headers a browser would.
 */
import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { EchoStreamDashboardModule } from '../../lib';
import {
  DASHBOARD_STREAM,
  KeyGuard,
  seedDashboardStream,
  startDashboardApp,
  type AdapterName,
} from '../fixtures/dashboard.app';
import { rawRequest, rawSocketRequest, type RawAnswer } from '../support/raw-http';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

const DLQ = `${DASHBOARD_STREAM}:dlq`;
const KEY = { 'x-dashboard-key': 'let-me-in' };
const API = `/echo-stream/api/streams/${DASHBOARD_STREAM}`;

afterAll(async () => {
  await stopAllRedisServers();
});

/** The four headers of every answer under the mount path. */
function expectSecured(answer: RawAnswer, what: string): void {
  expect([what, answer.headers['content-security-policy']]).toEqual([
    what,
    expect.stringMatching(/^default-src 'self'/),
  ]);
  expect([what, answer.headers['x-content-type-options']]).toEqual([what, 'nosniff']);
  expect([what, answer.headers['cache-control']]).toEqual([what, 'no-store']);
  expect([what, answer.headers['referrer-policy']]).toEqual([what, 'no-referrer']);
}

describe('allowedHosts and readOnly at bootstrap', () => {
  it('refuses readOnly: false without guards, naming both options', () => {
    expect(() => EchoStreamDashboardModule.register({ readOnly: false })).toThrow(
      /'readOnly: false' needs option 'guards'/,
    );
    expect(() =>
      EchoStreamDashboardModule.register({ readOnly: false, guards: [KeyGuard] }),
    ).not.toThrow();
  });

  it('refuses an allowedHosts entry that is not a host', () => {
    for (const bad of [[], ['a b'], ['http://x'], ['*', 'localhost'], ['h:99999'], [7]]) {
      expect(() => EchoStreamDashboardModule.register({ allowedHosts: bad as string[] })).toThrow(
        /allowedHosts/,
      );
    }
  });
});

describe.each<AdapterName>(['express', 'fastify'])('dashboard front door on %s', (adapter) => {
  let server: RedisServer;
  let redis: Redis;
  let rw: { app: INestApplication; port: number };
  let named: { app: INestApplication; port: number };
  let open: { app: INestApplication; port: number };

  const start = async (name: string, options: Parameters<typeof startDashboardApp>[3]) => {
    const { app, base } = await startDashboardApp(server.url, adapter, name, options);
    return { app, port: Number(new URL(base).port) };
  };

  beforeAll(async () => {
    server = await RedisServer.start();
    redis = server.client();
    rw = await start('hosts-rw', { readOnly: false, guards: [KeyGuard] });
    named = await start('hosts-named', { allowedHosts: ['Dash.Example', 'pinned.example:1'] });
    open = await start('hosts-open', { allowedHosts: ['*'] });
    await waitFor(async () => (await redis.xinfo('GROUPS', DASHBOARD_STREAM)) as unknown[], {
      message: 'the billing group exists',
    });
    await seedDashboardStream(redis, 5);
    await waitFor(async () => (await redis.xlen(DLQ)) === 2, {
      message: 'billing dead-letters both undecodable entries',
    });
  });

  afterAll(async () => {
    await rw?.app.close();
    await named?.app.close();
    await open?.app.close();
    await server?.stop();
  });

  const everyRoute = [
    '/echo-stream',
    '/echo-stream/',
    '/echo-stream/assets/dashboard.js',
    '/echo-stream/assets/dashboard.css',
    '/echo-stream/assets/favicon.svg',
    '/echo-stream/api/overview',
    `${API}/groups/audit/pending`,
    `${API}/dead-letters`,
    `${API}/entries`,
    '/echo-stream/api/no-such-route',
    '/echo-stream/no-such-page',
  ];

  it('a rebinding request (Host, Origin and Sec-Fetch-Site all forged) gets a 421 and no data on every route', async () => {
    const before = await redis.xrange(DLQ, '-', '+');
    const forged = (port: number) => ({
      host: `evil.example:${port}`,
      origin: `http://evil.example:${port}`,
      'sec-fetch-site': 'same-origin',
      ...KEY,
    });
    for (const path of everyRoute) {
      const answer = await rawRequest(rw.port, 'GET', path, forged(rw.port));
      expect([path, answer.status]).toEqual([path, 421]);
      expect(answer.body).not.toMatch(/decode_error|payments|billing|<html|function/i);
      expectSecured(answer, `421 of ${path}`);
    }
    for (const [path, body] of [
      ['dead-letters/redrive', {}],
      ['dead-letters/delete', { entryIds: before.map(([id]) => id) }],
    ] as const) {
      const answer = await rawRequest(
        rw.port,
        'POST',
        `${API}/${path}`,
        { ...forged(rw.port), 'content-type': 'application/json' },
        JSON.stringify(body),
      );
      expect([path, answer.status]).toEqual([path, 421]);
      expectSecured(answer, `421 of POST ${path}`);
    }
    expect(await redis.xrange(DLQ, '-', '+')).toEqual(before);
  });

  it('answers the loopback names by default, any port, any case; refuses others and a missing Host', async () => {
    for (const host of [
      `localhost:${rw.port}`,
      `LocalHost:${rw.port}`,
      `127.0.0.1:${rw.port}`,
      `[::1]:${rw.port}`,
      'localhost',
    ]) {
      const answer = await rawRequest(rw.port, 'GET', '/echo-stream/api/overview', {
        host,
        ...KEY,
      });
      expect([host, answer.status]).toEqual([host, 200]);
    }
    for (const host of [`127.0.0.2:${rw.port}`, `localhost.evil.example`, `[::2]:${rw.port}`]) {
      const answer = await rawRequest(rw.port, 'GET', '/echo-stream/api/overview', {
        host,
        ...KEY,
      });
      expect([host, answer.status]).toEqual([host, 421]);
    }
    // HTTP/1.0 may omit Host (Node refuses an HTTP/1.1 request without one by itself)
    const noHost = await rawSocketRequest(
      rw.port,
      'GET /echo-stream/api/overview HTTP/1.0\r\nx-dashboard-key: let-me-in',
    );
    expect(noHost.status).toBe(421);
    expect(noHost.body).not.toMatch(/payments/);
  });

  it('allowedHosts: names any port, host:port pins it, other names refused; [*] turns it off', async () => {
    const status = async (port: number, host: string) =>
      (await rawRequest(port, 'GET', '/echo-stream/api/overview', { host })).status;
    expect(await status(named.port, `dash.example:${named.port}`)).toBe(200);
    expect(await status(named.port, 'DASH.EXAMPLE')).toBe(200);
    expect(await status(named.port, 'pinned.example:1')).toBe(200);
    expect(await status(named.port, `pinned.example:${named.port}`)).toBe(421);
    expect(await status(named.port, `127.0.0.1:${named.port}`)).toBe(421);
    expect(await status(named.port, `localhost:${named.port}`)).toBe(421);
    expect(await status(open.port, `evil.example:${open.port}`)).toBe(200);
  });

  it('a mutation needs an Origin that is allowed and is the request host', async () => {
    const before = await redis.xrange(DLQ, '-', '+');
    const ids = before.map(([id]) => id);
    const del = (headers: Record<string, string>) =>
      rawRequest(
        rw.port,
        'POST',
        `${API}/dead-letters/delete`,
        { 'content-type': 'application/json', ...KEY, ...headers },
        JSON.stringify({ entryIds: ids }),
      );
    const refusals: Array<Record<string, string>> = [
      { host: `127.0.0.1:${rw.port}` },
      { host: `127.0.0.1:${rw.port}`, 'sec-fetch-site': 'same-origin' },
      { host: `127.0.0.1:${rw.port}`, origin: `http://evil.example:${rw.port}` },
      { host: `localhost:${rw.port}`, origin: `http://127.0.0.1:${rw.port}` },
      { host: `localhost:${rw.port}`, origin: `http://localhost:1` },
      { host: `localhost:${rw.port}`, origin: 'null' },
    ];
    for (const headers of refusals) {
      const answer = await del(headers);
      expect([headers, answer.status]).toEqual([headers, 403]);
      expect(answer.body).toMatch(/cross-origin mutation refused/);
      expectSecured(answer, `403 of ${JSON.stringify(headers)}`);
    }
    expect(await redis.xrange(DLQ, '-', '+')).toEqual(before);
    // same host, allowed: goes through (an id that is not there: deletes nothing)
    const ok = await rawRequest(
      rw.port,
      'POST',
      `${API}/dead-letters/delete`,
      {
        'content-type': 'application/json',
        ...KEY,
        host: `LOCALHOST:${rw.port}`,
        origin: `http://localhost:${rw.port}`,
        'sec-fetch-site': 'same-origin',
      },
      JSON.stringify({ entryIds: ['1-1'] }),
    );
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toEqual({ stream: DASHBOARD_STREAM, deleted: [] });
  });

  it('every answer under the mount path carries the security headers: 200, 403, 404, 400, 415', async () => {
    const host = { host: `127.0.0.1:${rw.port}` };
    const cases: Array<[string, Record<string, string>, number]> = [
      ['/echo-stream', KEY, 200],
      ['/echo-stream/api/overview', KEY, 200],
      ['/echo-stream/api/overview', {}, 403],
      ['/echo-stream', { 'x-dashboard-key': 'wrong' }, 403],
      ['/echo-stream/api/no-such-route', KEY, 404],
      ['/echo-stream/no/such/page', KEY, 404],
      [`${API}/entries?count=-1`, KEY, 400],
      ['/echo-stream/api/streams/secret/entries', KEY, 400],
    ];
    for (const [path, headers, status] of cases) {
      const answer = await rawRequest(rw.port, 'GET', path, { ...host, ...headers });
      expect([path, answer.status]).toEqual([path, status]);
      expectSecured(answer, `${status} of ${path}`);
    }
    const form = await rawRequest(
      rw.port,
      'POST',
      `${API}/dead-letters/redrive`,
      { ...host, ...KEY, origin: `http://127.0.0.1:${rw.port}`, 'content-type': 'text/plain' },
      '{}',
    );
    expect(form.status).toBe(415);
    expectSecured(form, '415 of a form post');
  });

  it('serves the page at {path}/ as at {path} (through a 308 to {path})', async () => {
    const answer = await fetch(`http://127.0.0.1:${rw.port}/echo-stream/?x=1`, { headers: KEY });
    expect(answer.status).toBe(200);
    expect(answer.url).toBe(`http://127.0.0.1:${rw.port}/echo-stream`);
    expect(answer.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await answer.text()).toContain('<script src="/echo-stream/assets/dashboard.js" defer>');
    const hop = await rawRequest(rw.port, 'GET', '/echo-stream/', KEY);
    expect([hop.status, hop.headers.location, hop.body]).toEqual([308, '/echo-stream', '']);
    expectSecured(hop, 'the 308 of {path}/');
  });

  it('an absolute-form request cannot point the page at another host', async () => {
    const answer = await rawSocketRequest(
      rw.port,
      `GET http://other.example/echo-stream HTTP/1.1\r\nHost: 127.0.0.1:${rw.port}\r\nx-dashboard-key: let-me-in`,
    );
    expect(answer.status).toBe(200);
    expect(answer.body).toContain('<script src="/echo-stream/assets/dashboard.js" defer>');
    expect(answer.body).not.toContain('other.example');
  });
});
