import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { AddressInfo } from 'node:net';
import { AppModule } from './app.module';
import { SampleConfig } from './config';
import { connectNotifications } from './notifications';

/**
 * Starts the sample on `HOST:PORT` (127.0.0.1:3000) against `REDIS_URL`. `npm run demo` builds
 * and runs it with a throw-away redis-server; by hand: `npx tsc -p sample/tsconfig.json && node
 * .sample-dist/sample/main.js`.
 */
async function bootstrap(): Promise<void> {
  const app = await NestFactory.create(AppModule);
  app.enableShutdownHooks();
  const config = app.get(SampleConfig);
  await connectNotifications(app);
  await app.listen(config.port, config.host);
  const { port } = app.getHttpServer().address() as AddressInfo;
  const base = `http://${config.host}:${port}`;
  new Logger('Sample').log(
    `listening on ${base}/ (stats ${base}/stats, metrics ${base}/metrics, dashboard ${base}/echo-stream), redis ${redact(config.redisUrl)}, FAILURE_RATE ${config.failureRate}`,
  );
}

/** Hides a password in a redis:// URL. */
function redact(url: string): string {
  return url.replace(/\/\/([^@/]*)@/, '//***@');
}

bootstrap().catch((err: unknown) => {
  new Logger('Sample').error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exitCode = 1;
});
