/**
 * The publish bound (lib/producer/publish-deadline.ts) without a server: what passes through,
 * what becomes an `EchoStreamPublishError`, and when. The real link cases (closed port,
 * blackhole, slow link) are in test/faults/redis-down.fault.spec.ts.
 */
import { spawn } from 'node:child_process';
import * as net from 'node:net';
import { EchoStreamConnectionError, EchoStreamPublishError, StreamProducer } from '../../lib';
import type { EchoStreamConnections } from '../../lib/runtime/echo-stream.connections';
import { publishWithin } from '../../lib/producer/publish-deadline';
import { FakeStreamsClient } from '../support/fake-streams-client';

const call = { method: 'publish', stream: 'orders', ids: ['id-1'] };

/** A loopback echo server that prints its port. */
const ECHO_SERVER = `
  const server = require('node:net').createServer((s) => {
    s.on('error', () => undefined);
    s.on('data', (d) => s.write(d));
  });
  server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port)));
`;

describe('publishWithin', () => {
  it('a reply in time is returned as it is', async () => {
    await expect(publishWithin(undefined, 500, call, async () => '1-0')).resolves.toBe('1-0');
  });

  it('no reply within the time: written unknown, reason timeout, the ids in the text', async () => {
    const startedAt = Date.now();
    const err = await publishWithin(
      undefined,
      200,
      { ...call, ids: ['a', 'b', 'c', 'd'] },
      () => new Promise<string>(() => undefined),
    ).catch((e: unknown) => e);
    const ms = Date.now() - startedAt;
    expect(err).toBeInstanceOf(EchoStreamPublishError);
    expect(err).toMatchObject({
      reason: 'timeout',
      written: 'unknown',
      stream: 'orders',
      ids: ['a', 'b', 'c', 'd'],
      timeoutMs: 200,
      command: 'XADD',
    });
    expect((err as Error).message).toContain('4 ids, a ... d');
    expect(ms).toBeGreaterThanOrEqual(195);
    expect(ms).toBeLessThan(1500);
  });

  it('a reply that came while the event loop was busy past the time is taken, not reported lost', async () => {
    // a loopback echo in a process of its own (one in this process could not answer while this
    // one is busy): the reply arrives over a socket, as Redis's does
    const echo = spawn(process.execPath, ['-e', ECHO_SERVER], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const port = Number(
        await new Promise<string>((resolve) => echo.stdout.once('data', (d) => resolve(String(d)))),
      );
      const socket = net.connect(port, '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      const send = () =>
        new Promise<string>((resolve) => {
          socket.once('data', (d) => resolve(String(d)));
          socket.write('1-0');
        });
      const reply = publishWithin(undefined, 50, call, send);
      const busyUntil = Date.now() + 300; // the echo lands meanwhile; the timer is due too
      while (Date.now() < busyUntil);
      await expect(reply).resolves.toBe('1-0');
      socket.destroy();
    } finally {
      echo.kill();
    }
  });

  it('waitMs (the replicaTimeoutMs of a durable publish) extends the reply bound, and the text says so', async () => {
    const slow = () => new Promise<string>((resolve) => setTimeout(() => resolve('1-0'), 300));
    // 100 ms for the reply + 400 ms the server may wait on purpose: a 300 ms reply is in time
    await expect(publishWithin(undefined, 100, call, slow, 400)).resolves.toBe('1-0');
    const startedAt = Date.now();
    const err = await publishWithin(
      undefined,
      100,
      call,
      () => new Promise(() => undefined),
      200,
    ).catch((e: unknown) => e);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(295);
    expect(err).toMatchObject({ written: 'unknown', timeoutMs: 100 });
    expect((err as Error).message).toContain('within 100 ms (+ 200 ms replicaTimeoutMs)');
  });

  it('a connection error during the write: written unknown, its cause kept', async () => {
    const lost = new EchoStreamConnectionError('connection to Redis at h:1 lost: x; XADD failed', {
      reason: 'closed',
      address: 'h:1',
      everConnected: true,
      command: 'XADD',
      detail: '',
    });
    const err = await publishWithin(undefined, 500, call, () => Promise.reject(lost)).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ reason: 'closed', address: 'h:1', written: 'unknown' });
    expect((err as Error).cause).toBe(lost);
  });

  it('a server reply (OOM, WRONGTYPE) rejects as it is', async () => {
    const client = new FakeStreamsClient();
    const oom = new Error("OOM command not allowed when used memory > 'maxmemory'.");
    client.fail('add', { error: oom });
    const connections = { client, publishTimeoutMs: 500 } as unknown as EchoStreamConnections;
    await expect(new StreamProducer(connections).publish('orders', { n: 1 })).rejects.toBe(oom);
  });
});
