/**
 * The `metrics: { registry }` option on a real Redis through the Nest glue: a known mix of
 * entries (handled, failed once, dead-lettered) scraped with prom-client's `register.metrics()`
 * reads the same figures as `ConsumerStats`; apps created and closed one after the other in one
 * process share prom-client's default registry without a collision or a stale series.
 */
import 'reflect-metadata';
import { Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Counter, register } from 'prom-client';
import { Redis } from 'ioredis';
import {
  ConsumerStats,
  EchoStreamConfigError,
  EchoStreamModule,
  StreamHandler,
  StreamProducer,
  type ConsumerSnapshot,
  type StreamMessage,
} from '../../lib';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

const STREAM = 'prom-e2e';
const FAST = { blockMs: 100, minIdleMs: 200, claimIntervalMs: 50, maxDeliveries: 2 };

@Injectable()
class BillingHandler {
  private readonly failedOnce = new Set<string>();

  @StreamHandler(STREAM, 'billing', FAST)
  charge(message: StreamMessage<{ kind: string }>): void {
    const { kind } = message.payload;
    if (kind === 'poison') throw new Error(`refusing poison ${message.id}`);
    if (kind === 'flaky' && !this.failedOnce.has(message.id)) {
      this.failedOnce.add(message.id);
      throw new Error(`refusing flaky ${message.id} once`);
    }
  }
}

@Injectable()
class AuditHandler {
  @StreamHandler(STREAM, 'audit', FAST)
  log(): void {}
}

let server: RedisServer;
let redis: Redis;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});

afterAll(async () => {
  await stopAllRedisServers();
});

afterEach(() => {
  // what a test left behind would show up as a collision in the next one
  expect(register.getMetricsAsArray().filter((m) => m.name.startsWith('echo_stream_'))).toEqual([]);
});

async function createApp(
  providers: Array<new (...args: never[]) => unknown>,
  consumerName: string,
): Promise<INestApplicationContext> {
  @Module({
    imports: [
      EchoStreamModule.forRoot({
        connection: server.url,
        consumerName,
        metrics: { registry: register },
      }),
    ],
    providers,
  })
  class AppModule {}
  // createApplicationContext runs init(): module init (metrics registered) and bootstrap (loops)
  return NestFactory.createApplicationContext(AppModule, { logger: false });
}

/** One sample line of the exposition text. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses sample lines (label values here have no escapes). */
function samples(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-zA-Z_:]+)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match) throw new Error(`unexpected sample line: ${line}`);
      const labels = Object.fromEntries(
        [...(match[2] ?? '').matchAll(/([a-z_]+)="([^"]*)"/g)].map(([, k, v]) => [k, v]),
      );
      return { name: match[1], labels, value: Number(match[3]) };
    });
}

function valueOf(all: Sample[], name: string, loop: ConsumerSnapshot): number | undefined {
  const found = all.filter(
    (s) =>
      s.name === name &&
      s.labels.stream === loop.stream &&
      s.labels.group === loop.group &&
      s.labels.consumer === loop.consumer &&
      s.labels.handler === loop.handler &&
      s.labels.state === undefined,
  );
  if (found.length > 1) throw new Error(`${found.length} series of ${name} for ${loop.group}`);
  return found[0]?.value;
}

function echoSeries(text: string): string[] {
  return samples(text)
    .filter((s) => s.name.startsWith('echo_stream_'))
    .map((s) => `${s.name}${JSON.stringify(s.labels)}`)
    .sort();
}

describe('metrics: { registry: register } (prom-client default registry)', () => {
  it('scrapes handled, failed and dead-lettered entries as ConsumerStats counts them', async () => {
    const own = new Counter({ name: 'app_orders_total', help: 'The app’s own metric.' });
    own.inc(2);
    const app = await createApp([BillingHandler, AuditHandler], 'prom-e2e');
    try {
      const producer = app.get(StreamProducer);
      for (let i = 0; i < 4; i++) await producer.publish(STREAM, { kind: 'good' });
      await producer.publish(STREAM, { kind: 'flaky' });
      await producer.publish(STREAM, { kind: 'poison' });
      await redis.xadd(STREAM, '*', 'id', 'bad-json', 'data', '{nope');

      const stats = app.get(ConsumerStats);
      await waitFor(
        () => {
          const billing = stats.get(STREAM, 'billing');
          const audit = stats.get(STREAM, 'audit');
          return billing?.totalAcked === 5 && billing.totalDlq === 2 && audit?.totalAcked === 6;
        },
        { timeoutMs: 15_000, message: 'billing acks 5 and dead-letters 2, audit acks 6' },
      );
      await stats.inspect(STREAM, 'billing');
      await stats.inspect(STREAM, 'audit');

      const text = await register.metrics();
      const snapshots = stats.snapshot();
      const scraped = samples(text);
      expect(snapshots).toHaveLength(2);
      for (const loop of snapshots) {
        expect({
          read: valueOf(scraped, 'echo_stream_read_total', loop),
          acked: valueOf(scraped, 'echo_stream_acked_total', loop),
          dlq: valueOf(scraped, 'echo_stream_dead_lettered_total', loop),
          errors: valueOf(scraped, 'echo_stream_handler_errors_total', loop),
          deleted: valueOf(scraped, 'echo_stream_deleted_total', loop),
          up: valueOf(scraped, 'echo_stream_up', loop),
        }).toEqual({
          read: loop.totalRead,
          acked: loop.totalAcked,
          dlq: loop.totalDlq,
          errors: loop.totalErrors,
          deleted: loop.totalDeleted,
          up: 1,
        });
        // a sliding 10 s window: the scrape came a moment before the snapshot
        expect(valueOf(scraped, 'echo_stream_tps_out', loop)).toBeCloseTo(loop.tpsOut, 1);
        const inspection = await stats.inspect(loop.stream, loop.group);
        expect(valueOf(scraped, 'echo_stream_pending', loop)).toBe(inspection.pending);
        expect(valueOf(scraped, 'echo_stream_lag', loop)).toBe(inspection.lag);
        expect(valueOf(scraped, 'echo_stream_dead_letters', loop)).toBe(inspection.deadLetters);
      }
      const billing = stats.get(STREAM, 'billing')!;
      expect(billing).toMatchObject({ totalAcked: 5, totalDlq: 2, totalErrors: 3 });
      // both groups dead-letter the undecodable entry into the one `${STREAM}:dlq`
      expect(stats.get(STREAM, 'audit')).toMatchObject({ totalDlq: 1, totalErrors: 0 });
      expect(valueOf(scraped, 'echo_stream_dead_letters', billing)).toBe(3);
      expect(
        scraped.filter((s) => s.name === 'echo_stream_state' && s.labels.group === 'billing'),
      ).toEqual(
        ['starting', 'running', 'paused', 'degraded', 'stopping', 'stopped'].map((state) => ({
          name: 'echo_stream_state',
          labels: expect.objectContaining({ group: 'billing', state }) as unknown,
          value: state === 'running' ? 1 : 0,
        })),
      );

      // the same families, HELP/TYPE lines and series as ConsumerStats.prometheus()
      const ownText = stats.prometheus();
      const meta = (t: string) =>
        t.split('\n').filter((l) => /^# (HELP|TYPE) echo_stream_/.test(l));
      expect(meta(text)).toEqual(meta(ownText));
      expect(echoSeries(text)).toEqual(echoSeries(ownText));
      expect(text).toContain('app_orders_total 2');
    } finally {
      await app.close();
      register.removeSingleMetric('app_orders_total');
    }
  });

  it('lets apps be created and closed in turn, with no stale series after close', async () => {
    const first = await createApp([BillingHandler], 'first');
    await first.get(StreamProducer).publish(STREAM, { kind: 'good' });
    await waitFor(() => (first.get(ConsumerStats).get(STREAM, 'billing')?.totalAcked ?? 0) >= 1, {
      message: 'the first app acks an entry',
    });
    expect(await register.metrics()).toMatch(
      /^echo_stream_acked_total\{stream="prom-e2e",group="billing",consumer="first",handler="BillingHandler.charge"\} [1-9]\d*$/m,
    );
    await first.close();
    const afterFirst = await register.metrics();
    expect(afterFirst).not.toContain('echo_stream_');

    const second = await createApp([AuditHandler], 'second');
    // (no "A metric with the name ... has already been registered")
    await waitFor(() => second.get(ConsumerStats).get(STREAM, 'audit')?.state === 'running', {
      message: 'the second app runs its loop',
    });
    const during = await register.metrics();
    expect(during).toContain('consumer="second"');
    expect(during).not.toContain('consumer="first"');
    expect(echoSeries(during).every((s) => s.includes('"group":"audit"'))).toBe(true);
    await second.close();
    expect(await register.metrics()).not.toContain('echo_stream_');
  });

  it('fails bootstrap with a clear error when the registry already has one of its names', async () => {
    const taken = new Counter({ name: 'echo_stream_read_total', help: 'The app’s own.' });
    try {
      const error = await createApp([AuditHandler], 'taken').then(
        (app) => app.close().then(() => null),
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(EchoStreamConfigError);
      expect((error as Error).message).toContain(
        "the registry already has a metric named 'echo_stream_read_total'",
      );
      // module init failed before bootstrap: no loop ever read the stream as 'taken'
      const groups = (await redis.xinfo('GROUPS', STREAM)) as unknown[][];
      const consumers = await Promise.all(
        groups.map((g) => redis.xinfo('CONSUMERS', STREAM, String(g[1])) as Promise<unknown[][]>),
      );
      expect(consumers.flat().map((c) => c[1])).not.toContain('taken');
    } finally {
      expect(register.getSingleMetric('echo_stream_read_total')).toBe(taken);
      register.removeSingleMetric('echo_stream_read_total');
    }
  });

  it('rejects a metrics.registry that is not a prom-client registry, naming the option', async () => {
    @Module({
      imports: [
        EchoStreamModule.forRoot({
          connection: server.url,
          metrics: { registry: { metrics: () => '' } as never },
        }),
      ],
    })
    class BadModule {}
    const bad = await NestFactory.createApplicationContext(BadModule, {
      logger: false,
      abortOnError: false,
    }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(bad).toBeInstanceOf(EchoStreamConfigError);
    expect((bad as Error).message).toBe(
      "EchoStreamModule: option 'metrics.registry' must be a prom-client Registry (e.g. `register` from 'prom-client'), got an object",
    );
  });
});
