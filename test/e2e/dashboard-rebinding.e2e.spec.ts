/**
 * A DNS-rebinding attack on the dashboard in headless Chromium (README "Dashboard", Security),
 * against a real redis-server. `evil.example` resolves to 127.0.0.1 (`--host-resolver-rules`),
 * to a port whose connections first reach the attacker's server (the page loads from it), then,
 * once "the DNS record changed", the app: the attacker's script now talks to the app from its
 * own origin, so `Origin`, `Host` and `Sec-Fetch-Site: same-origin` all look right, and a guard
 * that trusts loopback connections lets it through. Only the host check stands in the way: the
 * script can neither read the dead letters nor delete one, and the letters are still there.
 * Without Chromium the test is skipped with one line saying so.
 */
import 'reflect-metadata';
import {
  Injectable,
  type CanActivate,
  type ExecutionContext,
  type INestApplication,
} from '@nestjs/common';
import type { Redis } from 'ioredis';
import * as http from 'node:http';
import * as net from 'node:net';
import type { Browser } from 'playwright-core';
import {
  DASHBOARD_STREAM,
  seedDashboardStream,
  startDashboardApp,
} from '../fixtures/dashboard.app';
import {
  CHROMIUM,
  CHROMIUM_ARGS,
  hasChromium,
  reportSkippedWithoutChromium,
} from '../support/chromium';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

const describeWithChromium = hasChromium ? describe : describe.skip;
const DLQ = `${DASHBOARD_STREAM}:dlq`;

/** The guard a rebinding page defeats: it trusts any request from a loopback address. */
@Injectable()
class LoopbackGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<{ socket: net.Socket }>();
    return ['127.0.0.1', '::1', '::ffff:127.0.0.1'].includes(request.socket.remoteAddress ?? '');
  }
}

/** The attacker's page: a script that reads the dead letters and deletes the ones it is given. */
const ATTACK_PAGE = `<!doctype html><title>cute cats</title><script>
window.attack = async (entryIds) => {
  const api = '/echo-stream/api/streams/${DASHBOARD_STREAM}/dead-letters';
  const read = await fetch(api);
  const deleted = await fetch(api + '/delete', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ entryIds }),
  });
  return { readStatus: read.status, readBody: await read.text(), deleteStatus: deleted.status };
};
</script>`;

/** Forwards each new connection to `target` (the "DNS answer"), which the test switches. */
async function startRebindingPort(initialTarget: number) {
  let target = initialTarget;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    rebind(to: number) {
      target = to;
      for (const socket of sockets) socket.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

describeWithChromium('dashboard against a DNS-rebinding page in headless Chromium', () => {
  let server: RedisServer;
  let redis: Redis;
  let app: INestApplication;
  let attacker: http.Server;
  let rebinding: Awaited<ReturnType<typeof startRebindingPort>>;
  let browser: Browser | undefined;
  let appPort: number;

  beforeAll(async () => {
    server = await RedisServer.start();
    redis = server.client();
    let base: string;
    ({ app, base } = await startDashboardApp(server.url, 'express', 'dash-rebind', {
      readOnly: false,
      guards: [LoopbackGuard],
    }));
    appPort = Number(new URL(base).port);
    await waitFor(async () => (await redis.xinfo('GROUPS', DASHBOARD_STREAM)) as unknown[], {
      message: 'the billing group exists',
    });
    await seedDashboardStream(redis, 3);
    await waitFor(async () => (await redis.xlen(DLQ)) === 2, {
      message: 'billing dead-letters both undecodable entries',
    });
    attacker = http.createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html', connection: 'close' });
      response.end(ATTACK_PAGE);
    });
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
    rebinding = await startRebindingPort((attacker.address() as net.AddressInfo).port);
    // the app itself answers a loopback name: the guard lets a loopback request through
    const direct = await fetch(`${base}/echo-stream/api/streams/${DASHBOARD_STREAM}/dead-letters`);
    expect(direct.status).toBe(200);
  });

  afterAll(async () => {
    await browser?.close();
    await rebinding?.close();
    await new Promise<void>((resolve) => (attacker ? attacker.close(() => resolve()) : resolve()));
    await app?.close();
    await stopAllRedisServers();
  });

  it('the rebound page can neither read the dead letters nor delete one', async () => {
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [...CHROMIUM_ARGS, '--host-resolver-rules=MAP evil.example 127.0.0.1'],
    });
    const page = await browser.newPage();
    await page.goto(`http://evil.example:${rebinding.port}/`);
    await expect(page.title()).resolves.toBe('cute cats');

    // "the DNS record changes": evil.example:<port> now reaches the app
    rebinding.rebind(appPort);
    const before = await redis.xrange(DLQ, '-', '+');
    const entryIds = before.map(([id]) => id);
    const result = await page.evaluate(
      (ids) =>
        (
          globalThis as unknown as {
            attack(ids: string[]): Promise<{
              readStatus: number;
              readBody: string;
              deleteStatus: number;
            }>;
          }
        ).attack(ids),
      entryIds,
    );
    expect(result.readStatus).toBe(421);
    expect(result.readBody).not.toMatch(/decode_error|bad-0|entryId/);
    expect(result.deleteStatus).toBe(421);
    expect(await redis.xrange(DLQ, '-', '+')).toEqual(before);
    expect(before).toHaveLength(2);
  });
});

reportSkippedWithoutChromium('dashboard-rebinding.e2e');
