/**
 * ConsumerStats after a known mix of entries (issue 4): every snapshot field, the live group
 * inspection, the Prometheus text and the health indicator, on a real Redis through the Nest glue.
 */
import 'reflect-metadata';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import {
  ConsumerStats,
  EchoStreamHealthIndicator,
  EchoStreamModule,
  StreamHandler,
  StreamProducer,
  type StreamMessage,
} from '../../lib';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

const STREAM = 'stats-e2e';
const GROUP = 'g';

@Injectable()
class MixedHandler {
  readonly failedOnce = new Set<string>();

  @StreamHandler(STREAM, GROUP, {
    blockMs: 100,
    minIdleMs: 200,
    claimIntervalMs: 50,
    maxDeliveries: 2,
  })
  handle(message: StreamMessage<{ kind: string }>): void {
    const { kind } = message.payload;
    if (kind === 'poison') throw new Error(`refusing poison ${message.id}`);
    if (kind === 'flaky' && !this.failedOnce.has(message.id)) {
      this.failedOnce.add(message.id);
      throw new Error(`refusing flaky ${message.id} once`);
    }
  }
}

let server: RedisServer;
let redis: Redis;
let app: INestApplication;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
  const moduleRef = await Test.createTestingModule({
    imports: [EchoStreamModule.forRoot({ connection: server.url, consumerName: 'stats-e2e' })],
    providers: [MixedHandler],
  }).compile();
  app = moduleRef.createNestApplication();
  await app.init();
});

afterAll(async () => {
  await app?.close();
  await stopAllRedisServers();
});

describe('ConsumerStats after 5 good, 1 flaky, 1 poison and 2 undecodable entries', () => {
  it('counts each kind where it belongs', async () => {
    const producer = app.get(StreamProducer);
    for (let i = 0; i < 5; i++) await producer.publish(STREAM, { kind: 'good' });
    await producer.publish(STREAM, { kind: 'flaky' });
    await producer.publish(STREAM, { kind: 'poison' });
    await redis.xadd(STREAM, '*', 'id', 'bad-json', 'data', '{nope');
    await redis.xadd(STREAM, '*', 'id', 'no-data', 'other', 'x');

    const stats = app.get(ConsumerStats);
    await waitFor(
      () => {
        const s = stats.get(STREAM, GROUP);
        return s && s.totalAcked === 6 && s.totalDlq === 3;
      },
      { timeoutMs: 10_000, message: 'six acked and three dead-lettered' },
    );
    const snapshot = stats.get(STREAM, GROUP)!;
    expect(snapshot).toMatchObject({
      stream: STREAM,
      group: GROUP,
      consumer: 'stats-e2e',
      handler: 'MixedHandler.handle',
      state: 'running',
      totalAcked: 6, // 5 good + the flaky one on its second delivery
      totalDlq: 3, // the poison pill + 2 decode errors
      totalErrors: 3, // flaky once + poison on both of its deliveries
      totalDeleted: 0,
    });
    // 9 fresh reads + the flaky and the poison entry reclaimed once each; the poison sweep claims
    // the pill without a read (12 only if the reclaim won the race against the sweep's XPENDING)
    expect(snapshot.totalRead).toBeGreaterThanOrEqual(11);
    expect(snapshot.totalRead).toBeLessThanOrEqual(12);
    expect(snapshot.tpsIn).toBeCloseTo(snapshot.totalRead / 10, 5);
    expect(snapshot.tpsOut).toBeCloseTo(0.6, 5);
    expect(snapshot.lastError).toMatch(/^refusing (poison|flaky)/);
    expect(stats.snapshot()).toEqual([expect.objectContaining({ stream: STREAM, group: GROUP })]);

    const inspection = await stats.inspect(STREAM, GROUP);
    expect(inspection).toEqual({
      pending: 0,
      lag: 0,
      consumers: [{ name: 'stats-e2e', pending: 0, idleMs: expect.any(Number) }],
      oldestPendingMs: null,
      deadLetters: 3,
    });
    const dlq = await redis.xrange(`${STREAM}:dlq`, '-', '+');
    expect(dlq.map(([, fields]) => fields[fields.indexOf('dlq_reason') + 1]).sort()).toEqual([
      'decode_error',
      'decode_error',
      'max_deliveries',
    ]);

    const text = stats.prometheus();
    const labels = `stream="${STREAM}",group="${GROUP}",consumer="stats-e2e",handler="MixedHandler.handle"`;
    expect(text).toContain(`echo_stream_acked_total{${labels}} 6`);
    expect(text).toContain(`echo_stream_dead_lettered_total{${labels}} 3`);
    expect(text).toContain(`echo_stream_handler_errors_total{${labels}} 3`);
    expect(text).toContain(`echo_stream_up{${labels}} 1`);
    // the group gauges come from the inspection above, and scrapes keep them fresh
    expect(text).toContain(`echo_stream_pending{${labels}} 0`);
    expect(text).toContain(`echo_stream_lag{${labels}} 0`);
    expect(text).toContain(`echo_stream_dead_letters{${labels}} 3`);
    expect(text).not.toContain('echo_stream_oldest_pending_seconds{');

    await expect(app.get(EchoStreamHealthIndicator).isHealthy()).resolves.toEqual({
      'echo-stream': { status: 'up', consumers: [expect.objectContaining({ state: 'running' })] },
    });
  });

  it('shows a failed entry as pending, with its consumer and age', async () => {
    const stats = app.get(ConsumerStats);
    await redis.xadd(STREAM, '*', 'id', 'late', 'data', '{"kind":"poison"}');
    await waitFor(async () => (await stats.inspect(STREAM, GROUP)).pending === 1, {
      timeoutMs: 5000,
    });
    const inspection = await stats.inspect(STREAM, GROUP);
    expect(inspection.consumers).toEqual([
      { name: 'stats-e2e', pending: 1, idleMs: expect.any(Number) },
    ]);
    expect(inspection.oldestPendingMs).toEqual(expect.any(Number));
    expect(inspection.oldestPendingMs!).toBeGreaterThanOrEqual(0);
    const labels = `stream="${STREAM}",group="${GROUP}",consumer="stats-e2e",handler="MixedHandler.handle"`;
    expect(stats.prometheus()).toMatch(
      new RegExp(`echo_stream_oldest_pending_seconds\\{${labels}\\} [0-9.]+\\n`),
    );
  });
});
