import 'reflect-metadata';
import { Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import {
  ConsumerStats,
  EchoStreamAdmin,
  EchoStreamModule,
  StreamHandler,
  StreamProducer,
  type EchoStreamModuleOptions,
} from '../../lib';
import { OrdersModule, RECORDER, RequestScopedHandler } from '../fixtures/recording.handlers';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

let server: RedisServer;
let redis: Redis;
const STREAM = 'orders-e2e';

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterAll(async () => {
  await stopAllRedisServers();
});
beforeEach(async () => {
  await redis.flushall();
  RECORDER.handled.length = 0;
  RECORDER.deadLetters.length = 0;
  RECORDER.failIds.clear();
  RECORDER.delayMs = 0;
  RECORDER.maxActive = 0;
});

async function boot(
  imports: unknown[],
  providers: unknown[] = [],
): Promise<INestApplicationContext> {
  const moduleRef = await Test.createTestingModule({
    imports: imports as never[],
    providers: providers as never[],
  }).compile();
  const app = moduleRef.createNestApplication();
  await app.init();
  return app;
}

function options(extra: EchoStreamModuleOptions = {}): EchoStreamModuleOptions {
  return { connection: server.url, consumerName: 'e2e', shutdownTimeoutMs: 2000, ...extra };
}

async function pending(stream = STREAM, group = 'billing'): Promise<number> {
  const summary = (await redis.xpending(stream, group)) as [number, ...unknown[]];
  return Number(summary[0]);
}

describe('EchoStreamModule', () => {
  it('consumes entries XADDed by a foreign producer and acks them (forRoot)', async () => {
    const app = await boot([EchoStreamModule.forRoot(options()), OrdersModule]);
    await redis.xadd(STREAM, '*', 'id', 'evt-1', 'data', '{"n":1}');
    await waitFor(() => RECORDER.handled.length === 1);
    expect(RECORDER.handled[0]).toMatchObject({
      id: 'evt-1',
      stream: STREAM,
      group: 'billing',
      consumer: 'e2e',
      payload: { n: 1 },
      attempts: 1,
    });
    await waitFor(async () => (await pending()) === 0);
    // the counter moves when the loop reads the XACK reply, a moment after Redis applied it
    await waitFor(() => app.get(ConsumerStats).get(STREAM, 'billing')?.totalAcked === 1);
    const stats = app.get(ConsumerStats).get(STREAM, 'billing');
    expect(stats).toMatchObject({
      handler: 'OrdersHandler.charge',
      state: 'running',
      totalAcked: 1,
    });
    await app.close();
    expect(app.get(ConsumerStats).snapshot()).toEqual([]);
  });

  it('forRootAsync with useFactory + inject', async () => {
    @Injectable()
    class Settings {
      readonly url = server.url;
    }
    @Module({ providers: [Settings], exports: [Settings] })
    class SettingsModule {}
    const app = await boot([
      EchoStreamModule.forRootAsync({
        imports: [SettingsModule],
        inject: [Settings],
        useFactory: (settings: Settings) => options({ connection: settings.url }),
      }),
      OrdersModule,
    ]);
    const receipt = await app.get(StreamProducer).publish(STREAM, { n: 7 });
    await waitFor(() => RECORDER.handled.length === 1);
    expect(RECORDER.handled[0]).toMatchObject({
      id: receipt.id,
      entryId: receipt.entryId,
      payload: { n: 7 },
    });
    await app.close();
  });

  it('forRootAsync with useClass', async () => {
    @Injectable()
    class EchoOptionsFactory {
      createEchoStreamOptions(): EchoStreamModuleOptions {
        return options();
      }
    }
    const app = await boot([
      EchoStreamModule.forRootAsync({ useClass: EchoOptionsFactory }),
      OrdersModule,
    ]);
    await redis.xadd(STREAM, '*', 'id', 'evt-2', 'data', '{"n":2}');
    await waitFor(() => RECORDER.handled.length === 1);
    await app.close();
  });

  it('registers each handler once even when forRoot is imported twice', async () => {
    @Module({ imports: [EchoStreamModule.forRoot(options())] })
    class FeatureModule {}
    const app = await boot([EchoStreamModule.forRoot(options()), FeatureModule, OrdersModule]);
    expect(app.get(ConsumerStats).snapshot()).toHaveLength(1);
    await app.close();
  });

  it('fails bootstrap on two handlers for one stream and group', async () => {
    @Injectable()
    class Twin {
      @StreamHandler(STREAM, 'billing')
      other(): void {}
    }
    await expect(boot([EchoStreamModule.forRoot(options()), OrdersModule], [Twin])).rejects.toThrow(
      /Two @StreamHandler methods consume orders-e2e\/billing: (OrdersHandler.charge and Twin.other|Twin.other and OrdersHandler.charge)/,
    );
  });

  it('fails bootstrap on a bad merged option with the handler named', async () => {
    await expect(
      boot([EchoStreamModule.forRoot(options({ defaults: { batchSize: 0 } })), OrdersModule]),
    ).rejects.toThrow(/batchSize' must be an integer >= 1, got number 0/);
  });

  it('rejects bad decorator arguments eagerly', () => {
    expect(() => StreamHandler('', 'g')).toThrow(/stream must be a non-empty string/);
    expect(() => StreamHandler('s', 'g', { concurrency: 1.5 })).toThrow(/concurrency/);
    expect(() => StreamHandler('s', 'g', { bogus: 1 } as never)).toThrow(/unknown option 'bogus'/);
  });

  it('skips request-scoped providers with a warning', async () => {
    const app = await boot(
      [EchoStreamModule.forRoot(options()), OrdersModule],
      [RequestScopedHandler],
    );
    expect(
      app
        .get(ConsumerStats)
        .snapshot()
        .map((s) => s.stream),
    ).toEqual([STREAM]);
    await app.close();
  });

  it('autoStart: false waits for EchoStreamAdmin.start()', async () => {
    const app = await boot([EchoStreamModule.forRoot(options({ autoStart: false })), OrdersModule]);
    await redis.xadd(STREAM, '*', 'id', 'later', 'data', '{"n":3}');
    await new Promise((r) => setTimeout(r, 300));
    expect(RECORDER.handled).toHaveLength(0);
    app.get(EchoStreamAdmin).start();
    await waitFor(() => RECORDER.handled.length === 1);
    await app.close();
  });

  it('runs one loop per stacked @StreamHandler on one method', async () => {
    @Injectable()
    class TwoStreams {
      readonly seen: string[] = [];
      @StreamHandler('stacked-a', 'g', { blockMs: 200 })
      @StreamHandler('stacked-b', 'g', { blockMs: 200 })
      handle(message: { stream: string; id: string }): void {
        this.seen.push(`${message.stream}:${message.id}`);
      }
    }
    const app = await boot([EchoStreamModule.forRoot(options())], [TwoStreams]);
    expect(
      app
        .get(ConsumerStats)
        .snapshot()
        .map((s) => `${s.stream} ${s.handler}`)
        .sort(),
    ).toEqual(['stacked-a TwoStreams.handle', 'stacked-b TwoStreams.handle']);
    await redis.xadd('stacked-a', '*', 'id', 'a1', 'data', '{}');
    await redis.xadd('stacked-b', '*', 'id', 'b1', 'data', '{}');
    const handler = app.get(TwoStreams);
    await waitFor(() => handler.seen.length === 2);
    expect(handler.seen.sort()).toEqual(['stacked-a:a1', 'stacked-b:b1']);
    await app.close();
  });

  it('bounds concurrency', async () => {
    @Injectable()
    class Parallel {
      active = 0;
      max = 0;
      done = 0;
      @StreamHandler('parallel-e2e', 'g', { concurrency: 4, blockMs: 200 })
      async handle(): Promise<void> {
        this.active++;
        this.max = Math.max(this.max, this.active);
        await new Promise((r) => setTimeout(r, 20));
        this.active--;
        this.done++;
      }
    }
    const app = await boot([EchoStreamModule.forRoot(options())], [Parallel]);
    const pipeline = redis.pipeline();
    for (let i = 0; i < 40; i++) pipeline.xadd('parallel-e2e', '*', 'data', '{}');
    await pipeline.exec();
    const handler = app.get(Parallel);
    await waitFor(() => handler.done === 40);
    expect(handler.max).toBe(4);
    await app.close();
  });

  it('graceful shutdown: in-flight handlers finish and are acked, unstarted entries are released', async () => {
    RECORDER.delayMs = 400;
    const app = await boot([EchoStreamModule.forRoot(options()), OrdersModule]);
    for (let i = 0; i < 5; i++) await redis.xadd(STREAM, '*', 'id', `s-${i}`, 'data', `{"n":${i}}`);
    await waitFor(() => RECORDER.active === 1);
    const started = Date.now();
    await app.close();
    const took = Date.now() - started;
    expect(took).toBeLessThan(2000);
    // the one in flight finished and was acked; the four unstarted are pending, idle past minIdleMs
    expect(RECORDER.handled.map((m) => m.id)).toEqual(['s-0']);
    const rows = (await redis.xpending(STREAM, 'billing', '-', '+', 10)) as Array<
      [string, string, number, number]
    >;
    expect(rows).toHaveLength(4);
    for (const [, , idle, deliveries] of rows) {
      expect(idle).toBeGreaterThanOrEqual(1000);
      expect(deliveries).toBe(0); // the read reached no handler: not charged (RETRYCOUNT)
    }
  });
});
