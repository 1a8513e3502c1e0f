/**
 * Helpers of the stream-lifecycle tests (retention, archive, history, cleanup): Nest apps of
 * `EchoStreamModule.forRoot(...)` with given providers, closed by `closeApps()`, and pipelined
 * stream fills.
 */
import { Module, type INestApplication, type Provider } from '@nestjs/common';
import type { Cluster, Redis } from 'ioredis';
import { ConsumerStats, type EchoStreamModuleOptions } from '../../lib';
import { CaptureLogger, createEchoStreamApp } from '../faults/support/nest-app';

/** An app booted by {@link bootApp}. */
export interface BootedApp {
  app: INestApplication;
  logger: CaptureLogger;
  stats: ConsumerStats;
}

const apps: INestApplication[] = [];

/**
 * Boots an app of the module (`retentionIntervalMs` 200 and `shutdownTimeoutMs` 2000 unless
 * given) and `providers`; rejects when init fails (the app is still closed by `closeApps()`).
 */
export async function bootApp(
  options: EchoStreamModuleOptions,
  providers: Provider[] = [],
  logger = new CaptureLogger(),
): Promise<BootedApp> {
  @Module({ providers })
  class ProvidersModule {}
  const app = await createEchoStreamApp(
    { retentionIntervalMs: 200, shutdownTimeoutMs: 2000, ...options },
    ProvidersModule,
    logger,
  );
  apps.push(app);
  await app.init();
  return { app, logger, stats: app.get(ConsumerStats) };
}

/** Closes every app booted so far (an app whose init failed too: its loops may have started). */
export async function closeApps(): Promise<void> {
  await Promise.all(apps.splice(0).map((app) => app.close().catch(() => undefined)));
}

/**
 * Writes `count` entries (`id` b<i>, `data` {"i":i}) in one pipeline, i from `from`; returns
 * their entry ids.
 */
export async function fill(
  redis: Redis | Cluster,
  stream: string,
  count: number,
  from = 0,
): Promise<string[]> {
  const pipeline = redis.pipeline();
  for (let i = from; i < from + count; i++) {
    pipeline.xadd(stream, '*', 'id', `b${i}`, 'data', JSON.stringify({ i }));
  }
  const results = (await pipeline.exec()) ?? [];
  return results.map(([err, id]) => {
    if (err) throw err;
    return String(id);
  });
}
