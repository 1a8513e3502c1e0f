/**
 * Self-test of the real-Redis harness: servers, persistence across SIGKILL, the TCP proxy and
 * waitFor. Invariant: every process the harness starts is gone when it says so.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { TcpProxy } from '../support/tcp-proxy';
import { sleep, waitFor } from '../support/wait-for';

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A raw RESP socket: send inline commands, collect whatever comes back. */
async function rawSocket(port: number) {
  const sock = net.connect({ host: '127.0.0.1', port });
  let received = '';
  let closed = false;
  sock.on('data', (d: Buffer) => (received += d.toString()));
  sock.on('error', () => undefined);
  sock.on('close', () => (closed = true));
  await new Promise<void>((resolve, reject) => {
    sock.once('connect', () => resolve());
    sock.once('error', reject);
  });
  return {
    send: (cmd: string) => sock.write(`${cmd}\r\n`),
    take: () => {
      const r = received;
      received = '';
      return r;
    },
    peek: () => received,
    isClosed: () => closed,
    close: () => sock.destroy(),
  };
}

afterAll(async () => {
  await stopAllRedisServers();
});

describe('RedisServer', () => {
  it('runs two isolated AOF servers; SIGKILL + restart keeps an XADD entry', async () => {
    const [a, b] = await Promise.all([
      RedisServer.start({ appendonly: true }),
      RedisServer.start({ appendonly: true, appendfsync: 'always' }),
    ]);
    expect(a.port).not.toBe(b.port);
    expect(a.dir).not.toBe(b.dir);
    expect(a.url).toBe(`redis://127.0.0.1:${a.port}`);

    const ca = a.client();
    const cb = b.client();
    await ca.set('k', 'a');
    await cb.set('k', 'b');
    expect(await ca.get('k')).toBe('a');
    expect(await cb.get('k')).toBe('b');
    expect(await ca.config('GET', 'appendfsync')).toEqual(['appendfsync', 'always']);

    const id = await ca.xadd('s', '*', 'f', 'v');
    const pid = a.pid!;
    await a.kill(); // SIGKILL: no shutdown, only what the AOF fsynced survives
    expect(a.isRunning()).toBe(false);
    expect(processAlive(pid)).toBe(false);

    await a.restart();
    expect(a.isRunning()).toBe(true);
    expect(a.pid).not.toBe(pid);
    // The tracked client reconnects to the same port by itself.
    expect(await ca.xrange('s', '-', '+')).toEqual([[id, ['f', 'v']]]);
    expect(await ca.get('k')).toBe('a');

    await Promise.all([a.stop(), b.stop()]);
    expect(fs.existsSync(a.dir)).toBe(false);
    expect(fs.existsSync(b.dir)).toBe(false);
  });

  it('loses everything across a restart without persistence', async () => {
    const s = await RedisServer.start();
    const c = s.client();
    await c.xadd('s', '*', 'f', 'v');
    await s.kill();
    await s.restart();
    expect(await c.xlen('s')).toBe(0);
    await s.stop();
  });

  it('supports a password, extra args and pause/resume', async () => {
    const s = await RedisServer.start({ password: 'p@ss word', extraArgs: ['--maxmemory', '2mb'] });
    expect(s.url).toBe(`redis://:p%40ss%20word@127.0.0.1:${s.port}`);
    const c = s.client({ commandTimeout: 200, maxRetriesPerRequest: 0 });
    expect(await c.config('GET', 'maxmemory')).toEqual(['maxmemory', String(2 * 1024 * 1024)]);

    s.pause();
    await expect(c.ping()).rejects.toThrow(/timed out/i);
    s.resume();
    await waitFor(() => c.ping().then((r) => r === 'PONG'), { message: 'PING after resume' });
    await s.stop();
  });

  it('stopAllRedisServers leaves no process and no dir behind', async () => {
    const servers = await Promise.all([RedisServer.start(), RedisServer.start()]);
    servers[1].pause(); // a hung server must still be stopped
    const pids = servers.map((s) => s.pid!);
    await stopAllRedisServers();
    for (const [i, s] of servers.entries()) {
      expect(s.isRunning()).toBe(false);
      expect(processAlive(pids[i])).toBe(false);
      expect(fs.existsSync(s.dir)).toBe(false);
    }
  });
});

describe('TcpProxy', () => {
  let server: RedisServer;
  let proxy: TcpProxy;

  beforeAll(async () => {
    server = await RedisServer.start();
  });
  beforeEach(async () => {
    proxy = await TcpProxy.start(server.port);
  });
  afterEach(async () => {
    await proxy.stop();
  });
  afterAll(async () => {
    await server.stop();
  });

  it('forwards, and cutAll closes live connections', async () => {
    const s = await rawSocket(proxy.port);
    s.send('PING');
    await waitFor(() => s.peek() === '+PONG\r\n', { message: 'PONG through proxy' });
    expect(proxy.connectionCount).toBe(1);
    proxy.cutAll();
    await waitFor(() => s.isClosed(), { message: 'client sees the cut' });
    expect(proxy.connectionCount).toBe(0);

    // ioredis recovers through the proxy after a cut.
    const c = server.client({ port: proxy.port });
    expect(await c.ping()).toBe('PONG');
    proxy.cutAll();
    expect(await c.ping()).toBe('PONG');
    c.disconnect();
  });

  it('blackhole stalls both ways but keeps the socket open', async () => {
    const s = await rawSocket(proxy.port);
    s.send('PING');
    await waitFor(() => s.take() === '+PONG\r\n');
    proxy.blackhole(true);
    s.send('SET bh 1');
    await sleep(150);
    expect(s.peek()).toBe('');
    expect(s.isClosed()).toBe(false);
    const direct = server.client();
    expect(await direct.exists('bh')).toBe(0); // the request never reached the server
    proxy.blackhole(false);
    s.send('PING');
    await waitFor(() => s.take() === '+PONG\r\n', { message: 'forwarding resumes' });
    s.close();
  });

  it('delays and drops replies', async () => {
    const s = await rawSocket(proxy.port);
    proxy.setDelay(100);
    const t0 = Date.now();
    s.send('PING');
    await waitFor(() => s.take() === '+PONG\r\n');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(90);
    proxy.setDelay(0);

    proxy.dropNextReply();
    s.send('ECHO dropped');
    await sleep(100);
    expect(s.peek()).toBe('');
    s.send('ECHO kept');
    await waitFor(() => s.take() === '$4\r\nkept\r\n', { message: 'next reply arrives' });
    s.close();
  });
});

describe('waitFor', () => {
  it('returns the first truthy value', async () => {
    let n = 0;
    await expect(waitFor(() => ++n >= 3 && n)).resolves.toBe(3);
  });

  it('names the message and the last value or error on timeout', async () => {
    await expect(
      waitFor(() => ({ count: 0 }).count, { timeoutMs: 50, message: 'count > 0' }),
    ).rejects.toThrow(/waitFor timed out after \d+ ms: count > 0; last value: 0/);
    await expect(
      waitFor(
        () => {
          throw new Error('boom');
        },
        { timeoutMs: 50 },
      ),
    ).rejects.toThrow(/last error: Error: boom/);
  });
});
