/**
 * A consumer as a separate OS process that saves a checkpoint and then SIGKILLs itself inside
 * its handler (before any XACK), for the checkpoint fault spec. Loads the BUILT package.
 *
 *   REDIS_URL, STREAM, GROUP, CONSUMER_NAME    (required)
 *
 * Stdout: `READY` once the loop runs; `SAVED <entryId> <attempts>` after saveCheckpoint resolved,
 * right before the SIGKILL.
 */
import 'reflect-metadata';
import * as fs from 'node:fs';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pkg from '../../../dist/index.js';

const { EchoStreamModule, StreamHandler, ConsumerStats } = pkg;
const { REDIS_URL, STREAM, GROUP, CONSUMER_NAME } = process.env;
const say = (line) => fs.writeSync(1, `${line}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class Handler {
  async handle(message) {
    await message.saveCheckpoint({ step: 3, by: CONSUMER_NAME });
    say(`SAVED ${message.entryId} ${message.attempts}`);
    process.kill(process.pid, 'SIGKILL');
    await new Promise(() => undefined);
  }
}
StreamHandler(STREAM, GROUP, { blockMs: 500 })(
  Handler.prototype,
  'handle',
  Object.getOwnPropertyDescriptor(Handler.prototype, 'handle'),
);
Injectable()(Handler);

class AppModule {}
Module({
  imports: [EchoStreamModule.forRoot({ connection: REDIS_URL, consumerName: CONSUMER_NAME })],
  providers: [Handler],
})(AppModule);

const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
const stats = app.get(ConsumerStats);
while (stats.get(STREAM, GROUP)?.state !== 'running') await sleep(10);
say('READY');
