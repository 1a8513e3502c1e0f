/**
 * Exactly-once commits on a Redis Cluster (3 masters, real redis-servers;
 * lib/redis/loop/entry-commits.ts): the script call goes to the source stream's master with every
 * key it writes declared, so writes in the stream's hash slot commit with the XACK there, and a
 * key of another slot makes the cluster refuse the whole call (CROSSSLOT): nothing written,
 * nothing acked. Through the module, an `exactlyOnce` handler commits in its stream's slot,
 * `m.tx` refuses a key of another slot at the call, naming the tag to use, and a publish to a
 * stream of another slot goes through the group's outbox: once, within a second, a dead peer's
 * outbox entries too.
 */
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Cluster } from 'ioredis';
import { EchoStreamModule, StreamHandler, type StreamMessage } from '../../lib';
import { keySlot } from '../../lib/redis/connection/cluster-routing';
import type { CommandLink } from '../../lib/redis/connection/command-link';
import { RedisEntryCommits } from '../../lib/redis/loop';
import { outboxKeyOf } from '../../lib/redis/package-keys';
import { outboxFieldsOf } from '../../lib/redis/publish';
import { openCommandLink } from '../support/command-links';
import { RedisCluster } from '../support/redis-cluster';
import { stopAllRedisServers } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

const GROUP = 'g';
let cluster: RedisCluster;
let admin: Cluster;
let link: CommandLink;
let commits: RedisEntryCommits;

beforeAll(async () => {
  cluster = await RedisCluster.start();
  admin = cluster.client();
  link = await openCommandLink({ connection: {}, cluster: { nodes: cluster.nodes } });
  commits = new RedisEntryCommits(link);
});
afterAll(async () => {
  await link?.close();
  await cluster?.stop();
  await stopAllRedisServers();
});

/** A stream of its own with one entry read by `c1`: the entry's id. */
async function deliveredOn(stream: string): Promise<string> {
  await admin.xgroup('CREATE', stream, GROUP, '$', 'MKSTREAM');
  await admin.xadd(stream, '*', 'n', '1');
  const reply = (await admin.xreadgroup('GROUP', GROUP, 'c1', 'STREAMS', stream, '>')) as Array<
    [string, Array<[string, string[]]>]
  >;
  return reply[0][1][0][0];
}

it("commits writes in the stream's slot with its XACK on its master; a key of another slot refuses the whole call", async () => {
  const stream = `{pay-${process.pid}}:in`;
  const id = await deliveredOn(stream);
  const [verdict] = await commits.commit(stream, GROUP, 'c1', [
    {
      entryId: id,
      deliveries: 1,
      writes: [
        { op: 'xadd', key: `{pay-${process.pid}}:out`, fields: ['n', '1'] },
        { op: 'incrBy', key: `{pay-${process.pid}}:total`, by: 7 },
      ],
    },
  ]);
  expect(verdict.outcome).toBe('committed');
  expect(await admin.xlen(`{pay-${process.pid}}:out`)).toBe(1);
  expect(await admin.get(`{pay-${process.pid}}:total`)).toBe('7');
  expect(await admin.xpending(stream, GROUP)).toEqual([0, null, null, null]);

  const other = `{pay-${process.pid}}:in2`;
  const second = await deliveredOn(other);
  let elsewhere = `elsewhere-${process.pid}`;
  for (let i = 0; keySlot(elsewhere) === keySlot(other); i++) elsewhere = `elsewhere-${i}`;
  await expect(
    commits.commit(other, GROUP, 'c1', [
      {
        entryId: second,
        deliveries: 1,
        writes: [
          { op: 'incrBy', key: `{pay-${process.pid}}:total`, by: 1 },
          { op: 'set', key: elsewhere, value: 'x' },
        ],
      },
    ]),
  ).rejects.toThrow(/CROSSSLOT/);
  expect(await admin.get(`{pay-${process.pid}}:total`)).toBe('7');
  expect(await admin.exists(elsewhere)).toBe(0);
  const [count] = (await admin.xpending(other, GROUP)) as [number];
  expect(Number(count)).toBe(1);
});

it("an exactlyOnce handler on the Cluster commits in its stream's slot; a key of another slot is refused at m.tx's call, naming the tag", async () => {
  const tag = `{eo-${process.pid}}`;
  const stream = `${tag}:in`;
  let elsewhere = `elsewhere-${process.pid}`;
  for (let i = 0; keySlot(elsewhere) === keySlot(stream); i++) elsewhere = `elsewhere-${i}`;
  const refusals: string[] = [];
  @Injectable()
  class Stage {
    @StreamHandler(stream, GROUP, { exactlyOnce: true, blockMs: 200, retry: false })
    handle(m: StreamMessage<{ n: number; far?: boolean }>): void {
      m.tx.incrBy(`${m.tx.slotTag}:total`, m.payload.n);
      m.tx.publish(`${m.tx.slotTag}:out`, { n: m.payload.n });
      if (!m.payload.far) return;
      try {
        m.tx.set(elsewhere, 'x');
      } catch (err) {
        refusals.push((err as Error).message);
        throw err;
      }
    }
  }
  @Module({
    imports: [EchoStreamModule.forRoot({ cluster: { nodes: cluster.nodes }, consumerName: 'c1' })],
    providers: [Stage],
  })
  class StageModule {}
  const app = await NestFactory.createApplicationContext(StageModule, { logger: false });
  try {
    await app.init();
    await admin.xadd(stream, '*', 'id', 'p-1', 'data', JSON.stringify({ n: 5 }));
    await admin.xadd(stream, '*', 'id', 'p-2', 'data', JSON.stringify({ n: 7, far: true }));
    await waitFor(async () => (await admin.get(`${tag}:total`)) === '5' && refusals.length > 0, {
      timeoutMs: 20_000,
      message: 'the first committed, the second refused',
    });
    expect(refusals[0]).toContain(`put the tag ${tag} in it`);
    expect(await admin.xlen(`${tag}:out`)).toBe(1);
    expect(await admin.exists(elsewhere)).toBe(0);
    // the refused entry wrote nothing and stays pending (its retry policy is off)
    const [pending] = (await admin.xpending(stream, GROUP)) as [number];
    expect(Number(pending)).toBe(1);
  } finally {
    await app.close();
  }
});

it("an exactlyOnce handler's publish to a stream of another slot goes through the outbox: the target sees it once, within a second", async () => {
  const tag = `{ob-${process.pid}}`;
  const stream = `${tag}:in`;
  let far = `far-${process.pid}`;
  for (let i = 0; keySlot(far) === keySlot(stream); i++) far = `far-${process.pid}-${i}`;
  const outbox = outboxKeyOf(stream, GROUP);
  let failFirst = true;
  @Injectable()
  class Stage {
    @StreamHandler(stream, GROUP, {
      exactlyOnce: true,
      blockMs: 200,
      retry: { type: 'fixed', delayMs: 10 },
    })
    handle(m: StreamMessage<{ n: number }>): void {
      m.tx.publish(far, { n: m.payload.n });
      m.tx.incrBy(`${m.tx.slotTag}:total`, m.payload.n);
      // an attempt that throws leaves nothing in the outbox: its retry publishes once
      if (m.payload.n === 2 && failFirst) {
        failFirst = false;
        throw new Error('first attempt fails');
      }
    }
  }
  @Module({
    imports: [EchoStreamModule.forRoot({ cluster: { nodes: cluster.nodes }, consumerName: 'c1' })],
    providers: [Stage],
  })
  class StageModule {}
  // what a peer that died between its commit and its forward left in the outbox
  await admin.xadd(
    outbox,
    '*',
    ...outboxFieldsOf(far, 'from-a-dead-peer', ['id', 'from-a-dead-peer', 'data', '{"n":0}']),
  );
  const app = await NestFactory.createApplicationContext(StageModule, { logger: false });
  try {
    await app.init();
    await waitFor(async () => (await admin.xlen(far)) === 1, {
      timeoutMs: 3000,
      message: "the dead peer's outbox entry forwarded",
    });
    const publishedAt = Date.now();
    for (let n = 1; n <= 20; n++)
      await admin.xadd(stream, '*', 'id', `src-${n}`, 'data', JSON.stringify({ n }));
    await waitFor(async () => (await admin.xlen(far)) === 21, { timeoutMs: 10_000 });
    const tookMs = Date.now() - publishedAt;
    // within a second of the commits (a generous bound for a loaded machine)
    expect(tookMs).toBeLessThan(2500);
    await waitFor(async () => (await admin.xlen(outbox)) === 0, { timeoutMs: 3000 });
    const entries = await admin.xrange(far, '-', '+');
    const payloads = entries.map(([, fields]) => JSON.parse(fields[3]).n as number);
    expect(payloads.sort((a, b) => a - b)).toEqual(Array.from({ length: 21 }, (_, n) => n));
    expect(await admin.get(`${tag}:total`)).toBe(String((20 * 21) / 2));
    expect(await admin.xpending(stream, GROUP)).toEqual([0, null, null, null]);
  } finally {
    await app.close();
  }
});
