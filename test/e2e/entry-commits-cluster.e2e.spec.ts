/**
 * Exactly-once commits on a Redis Cluster (3 masters, real redis-servers;
 * lib/redis/loop/entry-commits.ts): the script call goes to the source stream's master with every
 * key it writes declared, so writes in the stream's hash slot commit with the XACK there, and a
 * key of another slot makes the cluster refuse the whole call (CROSSSLOT): nothing written,
 * nothing acked. Through the module, an `exactlyOnce` handler commits in its stream's slot, and
 * `m.tx` refuses a key of another slot at the call, naming the tag to use.
 */
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Cluster } from 'ioredis';
import { EchoStreamModule, StreamHandler, type StreamMessage } from '../../lib';
import { keySlot } from '../../lib/redis/connection/cluster-routing';
import type { CommandLink } from '../../lib/redis/connection/command-link';
import { RedisEntryCommits } from '../../lib/redis/loop';
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
