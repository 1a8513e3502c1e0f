/**
 * Idempotent publish, dedup and newerWins on a real Redis Cluster: the scripts' keys (the stream
 * and its index or record keys) share one slot, so they run (no CROSSSLOT) for streams with and
 * without a hash tag: a repeat writes nothing, a duplicate is skipped.
 */
import 'reflect-metadata';
import { Injectable, type INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Cluster } from 'ioredis';
import {
  ConsumerStats,
  EchoStreamModule,
  EchoStreamReplicationError,
  StreamHandler,
  StreamProducer,
  type StreamMessage,
} from '../../lib';
import { sleep, waitFor } from '../support/wait-for';
import { RedisCluster } from '../support/redis-cluster';
import { stopAllRedisServers } from '../support/redis-server';

let cluster: RedisCluster;
let redis: Cluster;
let app: INestApplicationContext;
const SKIP_STREAMS = ['dedup-plain', '{acct}:dedup'];
const handled = new Map<string, string[]>(SKIP_STREAMS.map((s) => [s, []]));
const skipOptions = {
  dedup: true,
  newerWins: (m: StreamMessage<{ account: string }>) => m.payload.account,
  blockMs: 200,
};

@Injectable()
class Skipping {
  @StreamHandler(SKIP_STREAMS[0], 'g', skipOptions)
  plain(m: StreamMessage<{ account: string }>): void {
    handled.get(m.stream)?.push(m.entryId);
  }

  @StreamHandler(SKIP_STREAMS[1], 'g', skipOptions)
  tagged(m: StreamMessage<{ account: string }>): void {
    handled.get(m.stream)?.push(m.entryId);
  }
}

beforeAll(async () => {
  cluster = await RedisCluster.start();
  redis = cluster.client();
  const moduleRef = await Test.createTestingModule({
    // the first publish may wait for the Cluster connection: 10 s, not the default 2 s (on CI's
    // 2 cores beside three other spec files it once took longer than 2 s)
    imports: [
      EchoStreamModule.forRoot({ cluster: { nodes: cluster.nodes }, publishTimeoutMs: 10_000 }),
    ],
    providers: [Skipping],
  }).compile();
  app = moduleRef.createNestApplication();
  await app.init();
}, 60_000);
afterAll(async () => {
  await app?.close();
  await stopAllRedisServers();
});

describe('idempotent publish on a Cluster', () => {
  it.each(['orders-plain', '{acct}:orders', 'odd}name'])(
    'stream %s: publish and publishMany run the script, repeats write nothing',
    async (stream) => {
      const producer = app.get(StreamProducer);
      const first = await producer.publish(stream, 1, { id: 'c1', idempotent: true });
      expect(await producer.publish(stream, 2, { id: 'c1', idempotent: true })).toEqual(first);
      const many = await producer.publishMany(stream, [3, 4, 5], {
        ids: ['c2', 'c1', 'c2'],
        idempotent: true,
      });
      expect(many[1]).toEqual(first);
      expect(many[2]).toEqual(many[0]);
      const entries = await redis.xrange(stream, '-', '+');
      expect(entries.map(([, fields]) => fields[1])).toEqual(['c1', 'c2']);
    },
  );

  it.each(['durable-plain', '{acct}:durable'])(
    "stream %s: with replicas the script and its WAIT go to the slot's master (no replica here: the replication error names the one entry, a repeat too)",
    async (stream) => {
      const producer = app.get(StreamProducer);
      const opts = { idempotent: true, replicas: 1, replicaTimeoutMs: 100 };
      const first = (await producer
        .publish(stream, 1, { ...opts, id: 'w1' })
        .catch((e: unknown) => e)) as EchoStreamReplicationError | undefined;
      expect(first).toBeInstanceOf(EchoStreamReplicationError);
      expect(first).toMatchObject({ ids: ['w1'], acknowledged: 0 });
      const again = (await producer
        .publishMany(stream, [1, 2], { ...opts, ids: ['w1', 'w2'] })
        .catch((e: unknown) => e)) as EchoStreamReplicationError;
      expect(again).toBeInstanceOf(EchoStreamReplicationError);
      expect(again.entryIds[0]).toBe(first!.entryIds[0]);
      const entries = await redis.xrange(stream, '-', '+');
      expect(entries.map(([entryId, fields]) => [entryId, fields[1]])).toEqual([
        [first!.entryIds[0], 'w1'],
        [again.entryIds[1], 'w2'],
      ]);
    },
  );
});

describe('dedup and newerWins on a Cluster', () => {
  it.each(SKIP_STREAMS)(
    'stream %s: the records are read and written with the XACK; a duplicate is skipped',
    async (stream) => {
      const producer = app.get(StreamProducer);
      const stats = app.get(ConsumerStats);
      const first = await producer.publish(stream, { account: 'a1' });
      await waitFor(() => handled.get(stream)?.length === 1);
      await waitFor(async () => Number(((await redis.xpending(stream, 'g')) as [number])[0]) === 0);
      await sleep(400); // the ack and its records went out with the next read
      await redis.xadd(stream, '*', 'id', first.id, 'data', JSON.stringify({ account: 'a1' }));
      await waitFor(() => stats.get(stream, 'g')?.totalDuplicates === 1, {
        message: 'the duplicate skipped',
      });
      expect(handled.get(stream)).toEqual([first.entryId]);
      expect(stats.get(stream, 'g')?.lastError).toBeNull();
    },
  );
});
