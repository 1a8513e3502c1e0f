/**
 * The transaction outbox's forwarder (lib/consumer/commit/outbox-forwarder.ts) on a real
 * redis-server: what an exactly-once commit left in the outbox reaches each target stream once,
 * oldest first, and leaves the outbox; a forward repeated (a crash between the publish and the
 * XDEL, two forwarders at once) writes nothing more; a target that cannot be written keeps its
 * entries in the outbox until it can; an entry without the outbox's layout is reported once and
 * left there.
 */
import type { Redis } from 'ioredis';
import { OutboxForwarder } from '../../lib/consumer/commit';
import type { CommandLink } from '../../lib/redis/connection/command-link';
import { RedisStreamQueries } from '../../lib/redis/operator';
import { outboxKeyOf } from '../../lib/redis/package-keys';
import {
  outboxFieldsOf,
  RedisStreamWrites,
  RedisTransactionOutboxes,
} from '../../lib/redis/publish';
import { openCommandLink } from '../support/command-links';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

const OUTBOX = outboxKeyOf('payments', 'ledger');

let server: RedisServer;
let admin: Redis;
let link: CommandLink;
let outboxes: RedisTransactionOutboxes;

beforeAll(async () => {
  server = await RedisServer.start();
  admin = server.client();
  link = await openCommandLink({ connection: server.url, cluster: undefined });
  outboxes = new RedisTransactionOutboxes(
    new RedisStreamQueries(link),
    new RedisStreamWrites(link),
  );
});
afterAll(async () => {
  await link.close();
  await stopAllRedisServers();
});
beforeEach(async () => {
  await admin.flushall();
});

/** What a commit writes to the outbox for an output `n` to `target`. */
async function committed(target: string, n: number): Promise<string> {
  const id = `out-${n}`;
  await admin.xadd(
    OUTBOX,
    '*',
    ...outboxFieldsOf(target, id, ['id', id, 'data', JSON.stringify({ n })]),
  );
  return id;
}

/** The entries of `stream`: their branded id and data. */
async function entriesOf(stream: string): Promise<string[]> {
  const entries = await admin.xrange(stream, '-', '+');
  return entries.map(([, fields]) => `${fields[1]} ${fields[3]}`);
}

function forwarder(logs: string[], pollMs = 1000): OutboxForwarder {
  const line = (level: string) => (text: string) => logs.push(`${level} ${text}`);
  return new OutboxForwarder(
    {
      where: 'apply on payments/ledger',
      logger: { log: line('log'), warn: line('warn'), error: line('error') },
      now: Date.now,
    },
    { outboxes, outbox: OUTBOX, windowMs: 60_000, pollMs, busyMs: 20 },
  );
}

it('forwards every entry to its target once, oldest first, and empties the outbox', async () => {
  for (let n = 1; n <= 150; n++) await committed(n % 2 === 0 ? 'even' : 'odd', n);
  const logs: string[] = [];
  const one = forwarder(logs);
  // two forwarders at once (two consumers of the group): each entry still lands once
  const two = forwarder(logs);
  one.written();
  two.written();
  await waitFor(async () => (await admin.xlen(OUTBOX)) === 0, { timeoutMs: 5000 });
  await Promise.all([one.stop(), two.stop()]);
  const odd = await entriesOf('odd');
  const even = await entriesOf('even');
  expect(odd).toEqual(
    Array.from({ length: 75 }, (_, i) => `out-${2 * i + 1} ${JSON.stringify({ n: 2 * i + 1 })}`),
  );
  expect(even).toEqual(
    Array.from({ length: 75 }, (_, i) => `out-${2 * i + 2} ${JSON.stringify({ n: 2 * i + 2 })}`),
  );
  expect(logs).toEqual([]);
});

it('writes nothing again for an entry forwarded before (a crash between the publish and the XDEL)', async () => {
  await committed('ledger', 1);
  const first = forwarder([]);
  await first.stop();
  expect(await entriesOf('ledger')).toEqual(['out-1 {"n":1}']);
  // the same outbox entry again, as a process that died before its XDEL left it
  await committed('ledger', 1);
  await committed('ledger', 2);
  const again = forwarder([]);
  await again.stop();
  expect(await entriesOf('ledger')).toEqual(['out-1 {"n":1}', 'out-2 {"n":2}']);
  expect(await admin.xlen(OUTBOX)).toBe(0);
});

it('keeps the entries of a target it cannot write until it can, forwarding the others', async () => {
  await admin.set('blocked', 'a string, not a stream');
  await committed('blocked', 1);
  await committed('open', 2);
  await committed('blocked', 3);
  const logs: string[] = [];
  const looking = forwarder(logs, 100);
  looking.start();
  await waitFor(async () => (await admin.xlen('open')) === 1, { timeoutMs: 5000 });
  await sleep(350); // several looks fail: reported once
  expect(await admin.xlen(OUTBOX)).toBe(2);
  expect(logs).toHaveLength(1);
  expect(logs[0]).toMatch(
    /^warn apply on payments\/ledger: forwarding the outbox \{payments\}:echo-outbox:ledger failed \(.*WRONGTYPE.*\); its entries stay there/,
  );
  await admin.del('blocked');
  await waitFor(async () => (await admin.xlen(OUTBOX)) === 0, { timeoutMs: 5000 });
  await looking.stop();
  expect(await entriesOf('blocked')).toEqual(['out-1 {"n":1}', 'out-3 {"n":3}']);
  expect(logs[1]).toBe(
    'log apply on payments/ledger: the outbox {payments}:echo-outbox:ledger is forwarded again',
  );
});

it('reports an entry without the outbox layout once and leaves it there', async () => {
  const stray = await admin.xadd(OUTBOX, '*', 'id', 'x', 'data', '{}');
  await committed('ledger', 1);
  const logs: string[] = [];
  const looking = forwarder(logs, 50);
  looking.start();
  await sleep(300);
  await looking.stop();
  expect(await entriesOf('ledger')).toEqual(['out-1 {"n":1}']);
  expect((await admin.xrange(OUTBOX, '-', '+')).map(([id]) => id)).toEqual([stray]);
  expect(logs).toEqual([
    `error apply on payments/ledger: outbox entry ${stray} of {payments}:echo-outbox:ledger is not forwarded: it does not start with echo-target and echo-id (it was not written by a commit); it stays in the outbox`,
  ]);
});
