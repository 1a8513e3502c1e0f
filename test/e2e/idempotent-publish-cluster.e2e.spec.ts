/**
 * Idempotent publish on a real Redis Cluster: the script's keys (the stream and its index keys)
 * share one slot, so it runs (no CROSSSLOT) for streams with and without a hash tag, and a repeat
 * writes nothing.
 */
import 'reflect-metadata';
import type { INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Cluster } from 'ioredis';
import { EchoStreamModule, StreamProducer } from '../../lib';
import { RedisCluster } from '../support/redis-cluster';
import { stopAllRedisServers } from '../support/redis-server';

let cluster: RedisCluster;
let redis: Cluster;
let app: INestApplicationContext;

beforeAll(async () => {
  cluster = await RedisCluster.start();
  redis = cluster.client();
  const moduleRef = await Test.createTestingModule({
    imports: [EchoStreamModule.forRoot({ cluster: { nodes: cluster.nodes } })],
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
});
