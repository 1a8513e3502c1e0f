/**
 * The one deadline rule of the Redis layer (lib/redis/connection/command-link.ts), on a real redis-server
 * behind a TCP proxy that loses a reply on demand (the request reaches Redis, the answer never
 * comes back: a command outlives its deadline on a link that looks alive). A late reply rejects
 * with RedisDeadlineError, notes a `timeout` on the monitor and replaces the connection; an answer
 * in time, a reply error, or a late reply on a connection beside the link drops nothing. The
 * lifecycle client (retention, cleanup, history) goes by the same rule on the link it shares.
 */
import { Redis } from 'ioredis';
import { CommandLink } from '../../lib/redis/connection/command-link';
import type { RedisConnection } from '../../lib/redis/connection/cluster-routing';
import { createConnection } from '../../lib/redis/connection/redis-connection.factory';
import { isReplyError, RedisDeadlineError } from '../../lib/redis/redis-errors';
import { RedisStreamsClient } from '../../lib/redis/streams-client';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { openCommandLink } from '../support/command-links';
import { TcpProxy } from '../support/tcp-proxy';
import { sleep, waitFor } from '../support/wait-for';

const DEADLINE_MS = 300;
/** Generous: a loaded CI machine; the lower bound is strict. */
const UPPER_SLACK_MS = 2000;

let server: RedisServer;
let proxy: TcpProxy;
let connection: RedisConnection;
let link: CommandLink;

/** The connection as the module opens a loop's (fails fast while down, reconnects underneath). */
function openViaProxy(): RedisConnection {
  return createConnection(
    { connection: `redis://127.0.0.1:${proxy.port}`, cluster: undefined },
    'loop',
    () => undefined,
  );
}

/** CLIENT ID of the link's connection: a new id means the connection was replaced. */
async function clientId(via: CommandLink = link): Promise<number> {
  return Number(await via.send(['CLIENT', 'ID']));
}

/** Resolves with the rejection of `promise` and how long it took to reject. */
async function rejection(promise: Promise<unknown>): Promise<{ err: unknown; ms: number }> {
  const startedAt = Date.now();
  try {
    await promise;
  } catch (err) {
    return { err, ms: Date.now() - startedAt };
  }
  throw new Error('expected a rejection');
}

beforeAll(async () => {
  server = await RedisServer.start();
});
afterAll(async () => {
  await stopAllRedisServers();
});
beforeEach(async () => {
  proxy = await TcpProxy.start(server.port);
  connection = openViaProxy();
  link = new CommandLink(connection, DEADLINE_MS);
  await waitFor(() => connection.status === 'ready', { message: 'link ready' });
});
afterEach(async () => {
  await link.close();
  await proxy.stop();
});

describe('CommandLink: one deadline rule', () => {
  it('a reply later than the deadline: RedisDeadlineError, a timeout noted, the connection replaced', async () => {
    const before = await clientId();
    let closes = 0;
    connection.on('close', () => closes++);
    proxy.dropNextReply();

    const { err, ms } = await rejection(link.send(['PING']));

    expect(err).toBeInstanceOf(RedisDeadlineError);
    expect((err as Error).message).toBe(
      `PING got no reply within ${DEADLINE_MS} ms; the connection was dropped and is being replaced`,
    );
    expect(ms).toBeGreaterThanOrEqual(DEADLINE_MS - 5);
    expect(ms).toBeLessThan(DEADLINE_MS + UPPER_SLACK_MS);
    expect(link.monitor.lastFailure).toEqual({
      reason: 'timeout',
      detail: `PING got no reply within ${DEADLINE_MS} ms`,
    });
    // dropped at once, and ioredis connects again on its own
    await waitFor(() => closes === 1, { message: 'the connection closed' });
    const after = await waitFor(() => clientId(), { message: 'the link answers again' });
    expect(after).not.toBe(before);
    expect(link.monitor.state).toBe('ready');
  });

  it('a deadline of its own (a parked read) replaces the default one', async () => {
    proxy.dropNextReply();
    const { err, ms } = await rejection(link.send(['PING'], 2 * DEADLINE_MS));
    expect(err).toBeInstanceOf(RedisDeadlineError);
    expect(ms).toBeGreaterThanOrEqual(2 * DEADLINE_MS - 5);
    expect(ms).toBeLessThan(2 * DEADLINE_MS + UPPER_SLACK_MS);
  });

  it('a reply in time drops nothing, however slow', async () => {
    const before = await clientId();
    proxy.setDelay(DEADLINE_MS / 3); // each way: the round trip takes 2/3 of the deadline
    expect(await link.send(['PING'])).toBe('PONG');
    proxy.setDelay(0);
    expect(await clientId()).toBe(before);
    expect(link.monitor.lastFailure).toBeNull();
  });

  it('a reply that came while the event loop was busy past the deadline is taken, not dropped', async () => {
    // straight to the server: a proxy in this process could not pass the reply on while busy
    const own = await openCommandLink({ connection: server.url, cluster: undefined }, DEADLINE_MS);
    try {
      const before = await clientId(own);
      const reply = own.send(['PING']);
      // a synchronous stretch (a long handler, a GC pause) past the deadline: the PONG lands in
      // the socket meanwhile, and the deadline's timer runs before the socket is read
      const busyUntil = Date.now() + DEADLINE_MS * 2;
      while (Date.now() < busyUntil);
      expect(await reply).toBe('PONG');
      expect(own.monitor.lastFailure).toBeNull();
      expect(await clientId(own)).toBe(before);
    } finally {
      await own.close();
    }
  });

  it('a reply error passes through as the server said it, and drops nothing', async () => {
    const before = await clientId();
    const { err } = await rejection(link.send(['XADD', 'only-a-key']));
    expect(isReplyError(err)).toBe(true);
    expect((err as Error).message).toMatch(/^ERR wrong number of arguments/);
    expect(await clientId()).toBe(before);
  });

  it('a late reply on a connection beside the link: the deadline holds, nothing is dropped', async () => {
    const besideProxy = await TcpProxy.start(server.port);
    const beside = new Redis({ host: '127.0.0.1', port: besideProxy.port });
    beside.on('error', () => undefined);
    try {
      const ownBefore = await clientId();
      await beside.ping();
      let besideCloses = 0;
      beside.on('close', () => besideCloses++);
      besideProxy.dropNextReply();

      const { err, ms } = await rejection(link.sendBeside(beside, ['PING']));

      expect(err).toBeInstanceOf(RedisDeadlineError);
      expect(ms).toBeGreaterThanOrEqual(DEADLINE_MS - 5);
      expect(ms).toBeLessThan(DEADLINE_MS + UPPER_SLACK_MS);
      // (nothing more is sent beside: its lost reply leaves ioredis's reply queue one behind)
      await sleep(100);
      expect(besideCloses).toBe(0);
      expect(beside.status).toBe('ready');
      expect(await clientId()).toBe(ownBefore);
      expect(link.monitor.lastFailure).toBeNull();
    } finally {
      beside.disconnect();
      await besideProxy.stop();
    }
  });

  it('close(): QUIT, then the connection ends; a closed link closes again at once', async () => {
    const before = await clientId();
    await link.close();
    await waitFor(() => connection.status === 'end', { message: 'the connection ended' });
    const admin = server.client();
    await waitFor(
      async () =>
        !new RegExp(`^id=${before} `, 'm').test(String(await admin.call('CLIENT', 'LIST'))),
      { message: 'the server let the client go' },
    );
    admin.disconnect();
    await expect(link.close()).resolves.toBeUndefined();
  });
});

/**
 * Counts the writes the link's socket hands to the OS: one per `_write` (a chunk) or `_writev`
 * (every chunk buffered while corked, in one call).
 */
function countSocketWrites(of: RedisConnection): () => number {
  const socket = (of as Redis).stream as unknown as {
    _write: (...args: unknown[]) => unknown;
    _writev: (...args: unknown[]) => unknown;
  };
  let writes = 0;
  for (const method of ['_write', '_writev'] as const) {
    const original = socket[method].bind(socket);
    socket[method] = (...args: unknown[]) => {
      writes++;
      return original(...args);
    };
  }
  return () => writes;
}

describe('CommandLink.together: the commands of one synchronous run in one socket write', () => {
  const XACKS = 20;
  const sendXacks = (via: CommandLink): Array<Promise<unknown>> =>
    Array.from({ length: XACKS }, (_, i) => via.send(['XACK', `together-${i}`, 'g', '0-1']));

  it('20 XACKs sent inside together() leave in one write (one each without it), each with its reply', async () => {
    await link.send(['PING']); // the socket is open and idle
    const writes = countSocketWrites(connection);

    let before = writes();
    const alone = sendXacks(link);
    const writesAlone = writes() - before;
    await Promise.all(alone);

    let inside: Array<Promise<unknown>> = [];
    before = writes();
    link.together(() => {
      inside = sendXacks(link);
    });
    const writesTogether = writes() - before;

    expect(writesAlone).toBe(XACKS);
    expect(writesTogether).toBe(1);
    expect(await Promise.all(inside)).toEqual(Array.from({ length: XACKS }, () => 0));
    // nothing stays corked: a command after it leaves (and is answered) at once
    before = writes();
    const ping = link.send(['PING']);
    expect(writes() - before).toBe(1);
    expect(await ping).toBe('PONG');
  });

  it('a throw inside together() uncorks all the same: what it sent is answered', async () => {
    await link.send(['PING']);
    let sent: Array<Promise<unknown>> = [];
    expect(() =>
      link.together(() => {
        sent = sendXacks(link);
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(await Promise.all(sent)).toHaveLength(XACKS);
  });
});

describe('the lifecycle client goes by the same rule on the link it shares', () => {
  it('a lock command without a reply rejects at the deadline and replaces the connection', async () => {
    const client = new RedisStreamsClient(openViaProxy(), undefined, DEADLINE_MS);
    try {
      await waitFor(() => client.link.state === 'ready', { message: 'client ready' });
      const lifecycle = client.lifecycle();
      expect(await lifecycle.acquireLock(`lock-${process.pid}`, 'a', 60_000)).toBe(true);
      let downs = 0;
      client.link.onChange((event) => event === 'down' && downs++);
      proxy.dropNextReply();

      const { err, ms } = await rejection(lifecycle.renewLock(`lock-${process.pid}`, 'a', 60_000));

      expect(err).toBeInstanceOf(RedisDeadlineError);
      expect(ms).toBeGreaterThanOrEqual(DEADLINE_MS - 5);
      expect(ms).toBeLessThan(DEADLINE_MS + UPPER_SLACK_MS);
      expect(client.link.lastFailure?.reason).toBe('timeout');
      expect(downs).toBe(1);
      // the link is back, and the lock still held by its token
      expect(
        await waitFor(() => lifecycle.renewLock(`lock-${process.pid}`, 'a', 60_000), {
          message: 'renewed after the reconnect',
        }),
      ).toBe(true);
    } finally {
      await client.close();
    }
  });
});
