/**
 * Partitioned streams on Redis Cluster (docs/partitions.md): 3 masters + 3 replicas
 * (`cluster-node-timeout` 1000 ms), two apps of one group sharing the partitions of a stream
 * whose partition streams spread over the masters. Keyed publishes with `{ replicas: 1 }` run all
 * along (a rejected one is published again under the same id); the master holding the stream's
 * leases is SIGKILLed mid-run and its replica promoted. Per key: every acknowledged entry handled,
 * no start before the previous call of the key ended, no entry handled after a later one of its
 * key. Reports how long handling stopped around the kill.
 */
import 'reflect-metadata';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Cluster } from 'ioredis';
import {
  ConsumerStats,
  EchoStreamModule,
  StreamHandler,
  StreamProducer,
  brandedId,
  type StreamMessage,
} from '../../lib';
import { RedisCluster } from '../support/redis-cluster';
import { stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

const PARTITIONS = 6;
const KEYS = 12;
const log = (text: string) => process.stdout.write(`cluster partitions: ${text}\n`);

let cluster: RedisCluster;
let redis: Cluster;
const apps: INestApplication[] = [];

beforeAll(async () => {
  cluster = await RedisCluster.start({ replicasPerMaster: 1, nodeTimeoutMs: 1000 });
  redis = cluster.client();
});
afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()));
  redis?.disconnect();
  await cluster?.stop();
  await stopAllRedisServers();
});

interface Call {
  key: string;
  seq: number;
  startedAt: number;
  endedAt?: number;
}

async function startApp(name: string, stream: string, calls: Call[]): Promise<INestApplication> {
  @Injectable()
  class Handler {
    @StreamHandler(stream, 'g', { partitions: PARTITIONS, partitionLeaseMs: 5000, concurrency: 4 })
    async handle(m: StreamMessage<{ seq: number }>): Promise<void> {
      const call: Call = { key: m.key!, seq: m.payload.seq, startedAt: Date.now() };
      calls.push(call);
      await sleep(3);
      call.endedAt = Date.now();
    }
  }
  @Module({
    imports: [
      EchoStreamModule.forRoot({
        cluster: { nodes: cluster.nodes },
        consumerName: name,
        shutdownTimeoutMs: 2000,
      }),
    ],
    providers: [Handler],
  })
  class AppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = moduleRef.createNestApplication({ logger: ['error'] });
  apps.push(app);
  await app.init();
  return app;
}

it('spreads partitions over the masters and keeps per-key order through a master failover', async () => {
  const stream = `cparts-${process.pid}`;
  const masters = new Set<number>();
  for (let i = 0; i < PARTITIONS; i++)
    masters.add((await cluster.masterFor(`${stream}:p:${i}`)).port);
  expect(masters.size).toBeGreaterThanOrEqual(2);

  const calls: Call[] = [];
  const a = await startApp('a', stream, calls);
  await startApp('b', stream, calls);
  const owned = (app: INestApplication) =>
    app.get(ConsumerStats).snapshot()[0].partitions?.length ?? 0;
  await waitFor(() => owned(apps[0]) === 3 && owned(apps[1]) === 3, {
    timeoutMs: 15_000,
    message: 'three partitions each',
  });

  log('apps own three partitions each');
  const producer = a.get(StreamProducer);
  const acknowledged = new Map<string, number>(); // key -> entries acknowledged
  let rejected = 0;
  let publishing = true;
  const publishers = Array.from({ length: KEYS }, async (_, k) => {
    const key = `k${k}`;
    for (let seq = 0; publishing; seq++) {
      const id = brandedId();
      for (;;) {
        try {
          await producer.publish(stream, { seq }, { key, id, replicas: 1, replicaTimeoutMs: 500 });
          acknowledged.set(key, seq + 1);
          break;
        } catch {
          rejected++;
          await sleep(50);
        }
      }
      await sleep(15);
    }
  });

  await waitFor(() => calls.filter((c) => c.endedAt).length >= 100, {
    timeoutMs: 15_000,
    message: 'steady state',
  });
  log('steady');
  const victim = await cluster.masterFor(`{${stream}}:echo-leases:g`);
  const slots = await cluster.slotsOf(victim);
  const killedAt = Date.now();
  await victim.kill('SIGKILL');
  const promoted = await cluster.waitFailover(victim, slots, 20_000);
  const promotedAt = Date.now();
  expect(promoted).not.toBe(victim);
  log(`promoted after ${promotedAt - killedAt} ms`);
  // the old master rejoins as a replica of the new one: `replicas: 1` is met again there
  await victim.restart();
  await cluster.waitHealthy(20_000);
  await cluster.waitReplicated(20_000);
  await sleep(1000);
  publishing = false;
  await Promise.all(publishers);

  log(
    `published ${[...acknowledged.values()].reduce((n, v) => n + v, 0)}, handled ${calls.length}`,
  );
  // every acknowledged entry of every key handled
  await waitFor(
    () =>
      [...acknowledged].every(([key, n]) =>
        Array.from({ length: n }, (_, seq) => seq).every((seq) =>
          calls.some((c) => c.key === key && c.seq === seq && c.endedAt !== undefined),
        ),
      ),
    { timeoutMs: 30_000, message: 'every acknowledged entry handled' },
  );
  let gap = 0;
  const ends = calls
    .filter((c) => c.endedAt !== undefined)
    .map((c) => c.endedAt!)
    .sort((x, y) => x - y);
  for (let i = 1; i < ends.length; i++)
    if (ends[i - 1] >= killedAt - 1000 && ends[i] - ends[i - 1] > gap) gap = ends[i] - ends[i - 1];
  for (let k = 0; k < KEYS; k++) {
    const mine = calls.filter((c) => c.key === `k${k}`).sort((x, y) => x.startedAt - y.startedAt);
    for (let i = 1; i < mine.length; i++) {
      const [prev, next] = [mine[i - 1], mine[i]];
      if (next.startedAt < (prev.endedAt ?? Infinity))
        throw new Error(`k${k}: ${next.seq} started before ${prev.seq} ended`);
      if (next.seq < prev.seq) throw new Error(`k${k}: ${next.seq} handled after ${prev.seq}`);
    }
  }
  process.stdout.write(
    `cluster partitions: ${PARTITIONS} partitions on ${masters.size} masters, ${calls.length} calls ` +
      `of ${KEYS} keys; killed the leases' master port ${victim.port}, replica promoted after ` +
      `${promotedAt - killedAt} ms; handling stopped at most ${gap} ms; ${rejected} publish(es) ` +
      `rejected and published again\n`,
  );
}, 150_000);
