/**
 * The transport in a hybrid app (docs/microservices.md "Beside EchoStreamModule") on a real
 * redis-server: with `app`, the transport's loops are in the module's ConsumerStats beside its
 * @StreamHandler loops, the module's stop leaves them running, and the consumer cleanup runs on
 * the transport's groups (standalone too).
 */
import 'reflect-metadata';
import { Controller, Injectable, type INestApplication } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { lastValueFrom } from 'rxjs';
import {
  ConsumerStats,
  EchoStreamAdmin,
  EchoStreamModule,
  StreamHandler,
  StreamProducer,
  type StreamMessage,
} from '../../lib';
import { EchoStreamServer, type EchoStreamServerOptions } from '../../lib/microservices';
import { useMicroservices } from '../support/microservices';
import { waitFor } from '../support/wait-for';

// the file's server and clients (closed after each test); the hybrid apps are this file's own
const ms = useMicroservices();
const apps: INestApplication[] = [];
const handled: string[] = [];
const DEFAULTS = { blockMs: 200, minIdleMs: 1000, consumerCleanup: { idleMs: 1000 } };

@Controller()
class Events {
  @EventPattern('hy.events')
  handle(payload: { n: number }): void {
    handled.push(`event ${payload.n}`);
  }
}

@Injectable()
class Plain {
  @StreamHandler('hy.plain', 'mod')
  handle(message: StreamMessage<{ n: number }>): void {
    handled.push(`plain ${message.payload.n}`);
  }
}

afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
  handled.length = 0;
});

async function consumerNames(stream: string, group: string): Promise<string[]> {
  const reply = (await ms.redis().xinfo('CONSUMERS', stream, group)) as unknown[][];
  return reply.map((flat) => String(flat[flat.indexOf('name') + 1])).sort();
}

async function emit(pattern: string, data: unknown): Promise<void> {
  await lastValueFrom(ms.client().emit(pattern, data), { defaultValue: undefined });
}

/** An HTTP app with EchoStreamModule and the transport connected; `withApp`: the option set. */
async function hybrid(
  withApp: boolean,
  transport: Partial<EchoStreamServerOptions> = {},
): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      EchoStreamModule.forRoot({
        connection: ms.server().url,
        consumerName: 'hybrid',
        defaults: DEFAULTS,
      }),
    ],
    controllers: [Events],
    providers: [Plain],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  apps.push(app);
  app.connectMicroservice(
    {
      strategy: new EchoStreamServer({
        connection: ms.server().url,
        group: 'svc',
        consumerName: 'hybrid',
        defaults: DEFAULTS,
        ...(withApp ? { app } : {}),
        ...transport,
      }),
    },
    { inheritAppConfig: true },
  );
  await app.startAllMicroservices();
  await app.init();
  return app;
}

it("shows the transport's loops in the module's ConsumerStats; the module's stop leaves them running", async () => {
  const app = await hybrid(true);
  await emit('hy.events', { n: 1 });
  await app.get(StreamProducer).publish('hy.plain', { n: 1 });
  await waitFor(() => handled.length === 2, { message: 'both handled' });
  const stats = app.get(ConsumerStats);
  const loops = stats.snapshot().map((s) => `${s.stream}/${s.group}`);
  expect(loops.sort()).toEqual(['hy.events/svc', 'hy.plain/mod']);
  await waitFor(() => stats.get('hy.events', 'svc')?.totalAcked === 1, {
    message: "the transport's ack in the module's stats",
  });

  // the module's own stop (an admin drain) takes its loops down, never the transport's
  await app.get(EchoStreamAdmin).stop();
  expect(stats.snapshot().map((s) => `${s.stream}/${s.group}`)).toEqual(['hy.events/svc']);
  await emit('hy.events', { n: 2 });
  await waitFor(() => handled.includes('event 2'), { message: 'the transport still handles' });
  await waitFor(() => stats.get('hy.events', 'svc')?.totalAcked === 2, {
    message: 'its second ack',
  });
});

it('runs the transport alone without the option: its loops are in none of the module surfaces', async () => {
  const app = await hybrid(false);
  await emit('hy.events', { n: 3 });
  await waitFor(() => handled.includes('event 3'), { message: 'handled' });
  expect(
    app
      .get(ConsumerStats)
      .snapshot()
      .map((s) => `${s.stream}/${s.group}`),
  ).toEqual(['hy.plain/mod']);
});

it("trims the transport's stream by its own retention rule, never below what its group needs", async () => {
  const stream = 'hy.events';
  await hybrid(false, {
    retention: [{ stream, maxLen: 5 }],
    retentionIntervalMs: 200,
  });
  for (let n = 10; n < 30; n++) await emit(stream, { n });
  await waitFor(() => handled.length === 20, { message: '20 handled' });
  await waitFor(async () => (await ms.redis().xlen(stream)) <= 5, {
    timeoutMs: 8000,
    message: 'trimmed to 5',
  });
  expect(await ms.redis().xlen(stream)).toBeGreaterThanOrEqual(5);
});

it("deletes a dead consumer of the transport's group (consumer cleanup), never its own", async () => {
  await ms
    .redis()
    .xgroup('CREATE', 'hy.events', 'svc', '$', 'MKSTREAM')
    .catch(() => undefined);
  await ms.redis().xgroup('CREATECONSUMER', 'hy.events', 'svc', 'gone-pod');
  expect(await consumerNames('hy.events', 'svc')).toContain('gone-pod');
  await hybrid(false);
  await waitFor(async () => !(await consumerNames('hy.events', 'svc')).includes('gone-pod'), {
    timeoutMs: 8000,
    message: 'gone-pod deleted',
  });
  expect(await consumerNames('hy.events', 'svc')).toContain('hybrid');
});

it('fails listen() when the option names an app without EchoStreamModule', async () => {
  const moduleRef = await Test.createTestingModule({ controllers: [Events] }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  apps.push(app);
  app.connectMicroservice({
    strategy: new EchoStreamServer({ connection: ms.server().url, group: 'svc', app }),
  });
  await expect(app.startAllMicroservices()).rejects.toThrow(
    "EchoStreamServer: option 'app' names an app without EchoStreamModule",
  );
});
