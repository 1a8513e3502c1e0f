// A consumer process of bench/partitions.mjs: a Nest app context of the BUILT package with one
// no-op handler on STREAM/g (partitioned when PARTITIONS is set); prints READY once running.
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pkg from '../../dist/index.js';

const { EchoStreamModule, StreamHandler, ConsumerStats } = pkg;
const { REDIS_URL, STREAM, NAME } = process.env;
const PARTITIONS = process.env.PARTITIONS ? Number(process.env.PARTITIONS) : null;

class Handler {
  handle() {}
}
StreamHandler(STREAM, 'g', { partitions: PARTITIONS, concurrency: 8, batchSize: 100 })(
  Handler.prototype,
  'handle',
  Object.getOwnPropertyDescriptor(Handler.prototype, 'handle'),
);
Injectable()(Handler);
class AppModule {}
Module({
  imports: [EchoStreamModule.forRoot({ connection: REDIS_URL, consumerName: NAME })],
  providers: [Handler],
})(AppModule);

const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error'] });
app.enableShutdownHooks();
const stats = app.get(ConsumerStats);
while (stats.get(STREAM, 'g')?.state !== 'running') await new Promise((r) => setTimeout(r, 10));
process.stdout.write('READY\n');
