/**
 * The harness of the microservices transport's e2e specs: one throw-away redis-server per file,
 * microservices started on it with `EchoStreamServer` and clients made on it, all closed after
 * each test.
 */
import { Logger, type INestMicroservice } from '@nestjs/common';
import type { TestingModuleBuilder } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import {
  EchoStreamClient,
  EchoStreamServer,
  type EchoStreamClientOptions,
  type EchoStreamServerOptions,
} from '../../lib/microservices';
import { RedisServer, stopAllRedisServers } from './redis-server';

/** What a spec of the transport uses; `useMicroservices()` registers the hooks. */
export interface MicroservicesHarness {
  /** The file's server (set in `beforeAll`). */
  server(): RedisServer;
  /** A client of it, for the spec's own checks. */
  redis(): Redis;
  /**
   * A microservice of the module `builder` compiles, on the server, group and consumer from
   * `options`, with a short `blockMs` and `minIdleMs`; `setUp` runs before `listen()` (global
   * filters, interceptors).
   */
  start(
    builder: TestingModuleBuilder,
    options: Pick<EchoStreamServerOptions, 'group' | 'consumerName'>,
    setUp?: (app: INestMicroservice) => void,
  ): Promise<INestMicroservice>;
  /** `app` is closed by the spec itself: the harness leaves it. */
  release(app: INestMicroservice): void;
  /** An `EchoStreamClient` on the server. */
  client(options?: Omit<EchoStreamClientOptions, 'connection'>): EchoStreamClient;
  /** How many entries of `stream` the group has pending. */
  pendingCount(stream: string, group: string): Promise<number>;
}

/** Registers the file's hooks (server up before all, apps and clients closed after each). */
export function useMicroservices(): MicroservicesHarness {
  let server: RedisServer;
  let redis: Redis;
  const apps: INestMicroservice[] = [];
  const clients: EchoStreamClient[] = [];
  beforeAll(async () => {
    server = await RedisServer.start();
    redis = server.client();
    Logger.overrideLogger(['error']);
  });
  afterAll(async () => {
    redis.disconnect();
    await stopAllRedisServers();
  });
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    await Promise.all(clients.splice(0).map((client) => client.close()));
  });
  return {
    server: () => server,
    redis: () => redis,
    async start(builder, options, setUp = () => undefined) {
      const moduleRef = await builder.compile();
      const app = moduleRef.createNestMicroservice({
        strategy: new EchoStreamServer({
          connection: server.url,
          shutdownTimeoutMs: 2000,
          defaults: { blockMs: 200, minIdleMs: 1000 },
          ...options,
        }),
      });
      setUp(app);
      apps.push(app);
      await app.listen();
      return app;
    },
    release(app) {
      apps.splice(apps.indexOf(app), 1);
    },
    client(options = {}) {
      const made = new EchoStreamClient({ connection: server.url, ...options });
      clients.push(made);
      return made;
    },
    async pendingCount(stream, group) {
      const summary = (await redis.xpending(stream, group)) as [number, ...unknown[]];
      return Number(summary[0]);
    },
  };
}
