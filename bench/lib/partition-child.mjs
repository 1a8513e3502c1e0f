// A consumer process of bench/partitions.mjs: a Nest app context of the BUILT package with
// HANDLERS no-op handlers on STREAM/g (STREAM-1, STREAM-2, ... beyond the first; partitioned when
// PARTITIONS is set), and with PLAIN=1 one more, plain handler on STREAM-plain/g; prints READY once
// every loop runs and every partition is owned by someone.
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

// the build BENCH_LIB names (bench/partitions.mjs passes its own), else this tree's
const built =
  process.env.BENCH_LIB ?? fileURLToPath(new URL('../../dist/index.js', import.meta.url));
const pkg = createRequire(import.meta.url)(built);

const { EchoStreamModule, StreamHandler, ConsumerStats } = pkg;
const { REDIS_URL, STREAM, NAME } = process.env;
const PARTITIONS = process.env.PARTITIONS ? Number(process.env.PARTITIONS) : null;
const HANDLERS = Number(process.env.HANDLERS ?? 1);
const PLAIN = process.env.PLAIN === '1';
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 8);
// the whole fleet: READY waits for this process's share only when it is alone
const ALONE = process.env.ALONE === '1';

const streams = Array.from({ length: HANDLERS }, (_, i) => (i === 0 ? STREAM : `${STREAM}-${i}`));
class Handler {}
const bind = (method, stream, partitions) => {
  Handler.prototype[method] = () => undefined;
  StreamHandler(stream, 'g', { partitions, concurrency: CONCURRENCY, batchSize: 100 })(
    Handler.prototype,
    method,
    Object.getOwnPropertyDescriptor(Handler.prototype, method),
  );
};
streams.forEach((stream, i) => bind(`h${i}`, stream, PARTITIONS));
if (PLAIN) bind('plain', `${STREAM}-plain`, null);
Injectable()(Handler);
class AppModule {}
Module({
  imports: [EchoStreamModule.forRoot({ connection: REDIS_URL, consumerName: NAME })],
  providers: [Handler],
})(AppModule);

const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error'] });
app.enableShutdownHooks();
const stats = app.get(ConsumerStats);
const ready = () =>
  streams.every((stream) => {
    const s = stats.get(stream, 'g');
    if (s?.state !== 'running') return false;
    return !ALONE || PARTITIONS === null || s.partitions?.length === PARTITIONS;
  }) &&
  (!PLAIN || stats.get(`${STREAM}-plain`, 'g')?.state === 'running');
while (!ready()) await new Promise((r) => setTimeout(r, 10));
process.stdout.write('READY\n');
