/**
 * A loop backing off through a Cluster failover resumes as soon as the slot map changes, not when
 * its backoff (100 ms doubling) happens to end (docs/scale.md "Redis Cluster").
 *
 * The failover is made at a chosen moment, so the loop's backoff is long when it happens: the
 * cluster runs with a long `cluster-node-timeout` (no automatic failover), the master of the
 * handler's stream is SIGKILLed, and 4.7 s later (the loop has failed about 5 times and waits
 * 3.2 s: 100+200+400+800+1600 ms went by) its replica takes over (CLUSTER FAILOVER TAKEOVER).
 * Measured: from the takeover to the first entry handled from the new master, published as soon
 * as the takeover is done. Without the watch the loop sleeps out its backoff, and its next beat
 * goes to the dead master's address again (a refused connection is no MOVED: its slot map is
 * never asked for), so it fails once more and backs off 6.4 s: handled about 8 s after the
 * takeover, against some 30 ms with it.
 */
import 'reflect-metadata';
import { Injectable, type INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  ConsumerStats,
  EchoStreamModule,
  StreamHandler,
  StreamProducer,
  type StreamMessage,
} from '../../lib';
import { RedisCluster } from '../support/redis-cluster';
import { stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

/** When the replica takes over, after the kill (mid-way through the loop's 3.2 s backoff). */
const TAKEOVER_AFTER_MS = 4700;

let cluster: RedisCluster;
let app: INestApplicationContext | undefined;

beforeAll(async () => {
  cluster = await RedisCluster.start({ replicasPerMaster: 1, nodeTimeoutMs: 30_000 });
}, 60_000);
afterAll(async () => {
  await app?.close();
  await cluster?.stop();
  await stopAllRedisServers();
});

describe('a loop on a Cluster whose master fails over', () => {
  it('resumes right after the slot map changes, not at the end of its backoff', async () => {
    const [victim] = cluster.servers;
    const replica = cluster.servers[3]; // replicates servers[0]
    let stream = '';
    for (let i = 0; !stream; i++) {
      const key = `resume-${process.pid}-${i}`;
      if ((await cluster.masterFor(key)) === victim) stream = key;
    }
    const handledAt = new Map<string, number>();
    @Injectable()
    class Handlers {
      @StreamHandler(stream, 'g', { blockMs: 1000 })
      handle(m: StreamMessage<unknown>): void {
        handledAt.set(m.id, Date.now());
      }
    }
    const moduleRef = await Test.createTestingModule({
      imports: [
        EchoStreamModule.forRoot({
          cluster: { nodes: cluster.nodes },
          consumerName: 'c1',
          shutdownTimeoutMs: 2000,
        }),
      ],
      providers: [Handlers],
    }).compile();
    app = moduleRef.createNestApplication();
    await app.init();
    const producer = app.get(StreamProducer);
    const stats = app.get(ConsumerStats);
    const before = await producer.publish(stream, { n: 0 });
    await waitFor(() => handledAt.has(before.id), { message: 'steady state' });

    const killedAt = Date.now();
    await victim.kill('SIGKILL');
    await waitFor(() => stats.snapshot()[0].state === 'degraded', { message: 'loop degraded' });
    await sleep(TAKEOVER_AFTER_MS - (Date.now() - killedAt));
    const takeover = replica.client();
    await takeover.call('CLUSTER', 'FAILOVER', 'TAKEOVER');
    const takeoverAt = Date.now();
    takeover.disconnect();
    await waitFor(async () => (await cluster.masterFor(stream)) === replica, {
      timeoutMs: 5000,
      intervalMs: 20,
      message: 'the replica serves the slot',
    });
    const servedAt = Date.now();
    // published as soon as the new master takes writes (the producer meets MOVED, learns the map)
    let id = '';
    await waitFor(
      async () => {
        id = (await producer.publish(stream, { n: 1 }).catch(() => undefined))?.id ?? '';
        return id !== '';
      },
      { timeoutMs: 5000, intervalMs: 20, message: 'a publish to the new master' },
    );
    const publishedAt = Date.now();
    await waitFor(() => handledAt.has(id), { timeoutMs: 10_000, message: 'handled again' });
    const resumeMs = handledAt.get(id)! - takeoverAt;
    console.log(
      `cluster loop resume: takeover ${takeoverAt - killedAt} ms after the kill; the slot map ` +
        `showed it ${servedAt - takeoverAt} ms later, the publish resolved at ` +
        `${publishedAt - takeoverAt} ms; the loop handled it ${resumeMs} ms after the takeover`,
    );
    expect(resumeMs).toBeGreaterThan(0);
    expect(resumeMs).toBeLessThan(1000);
  });
});
