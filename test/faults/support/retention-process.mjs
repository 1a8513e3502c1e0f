/**
 * An app process of the retention oracle (issue 14): a tiny Nest app that loads the BUILT package
 * (`dist/index.js`) and consumes one stream in two groups (`fast`, and `slow` which naps every
 * 100th entry), with a retention rule (`maxLen`) and a `@StreamArchive` method.
 *
 *   node test/faults/support/retention-process.mjs        (run from the repository root)
 *
 * Environment: REDIS_URL, STREAM, CONSUMER_NAME, LEDGER (required); MAX_LEN (1000), INTERVAL_MS (200).
 *
 * Ledger lines (one write(2) each on a file opened O_APPEND, written BEFORE the method returns):
 *   H <group> <brandedId> <ms>                      a handler call (its ack follows the return)
 *   A <brandedId> <entryId> <ms> <pid>              an entry handed to the archive (its trim follows)
 *
 * Stdout: `READY <pid>` once both loops run. SIGTERM is a graceful close (`enableShutdownHooks`).
 */
import 'reflect-metadata';
import * as fs from 'node:fs';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pkg from '../../../dist/index.js';
import { required } from './child-env.mjs';

const { EchoStreamModule, StreamHandler, StreamArchive, ConsumerStats } = pkg;

const REDIS_URL = required('REDIS_URL');
const STREAM = required('STREAM');
const CONSUMER_NAME = required('CONSUMER_NAME');
const LEDGER = required('LEDGER');
const MAX_LEN = Number(process.env.MAX_LEN ?? 1000);
const INTERVAL_MS = Number(process.env.INTERVAL_MS ?? 200);

const ledger = fs.openSync(LEDGER, 'a');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class Consumers {
  fast(message) {
    fs.writeSync(ledger, `H fast ${message.id} ${Date.now()}\n`);
  }

  async slow(message) {
    if (message.payload.i % 100 === 0) await sleep(3);
    fs.writeSync(ledger, `H slow ${message.id} ${Date.now()}\n`);
  }
}
for (const [group, batchSize] of [
  ['fast', 200],
  ['slow', 50],
]) {
  StreamHandler(STREAM, group, { blockMs: 100, batchSize })(
    Consumers.prototype,
    group,
    Object.getOwnPropertyDescriptor(Consumers.prototype, group),
  );
}
Injectable()(Consumers);

class Archive {
  fold(entries) {
    const at = Date.now();
    const lines = entries.map((e) => `A ${e.id} ${e.entryId} ${at} ${process.pid}\n`);
    fs.writeSync(ledger, lines.join(''));
  }
}
StreamArchive(STREAM)(Archive.prototype, 'fold', Object.getOwnPropertyDescriptor(Archive.prototype, 'fold'));
Injectable()(Archive);

class AppModule {}
Module({
  imports: [
    EchoStreamModule.forRoot({
      connection: REDIS_URL,
      consumerName: CONSUMER_NAME,
      shutdownTimeoutMs: 5000,
      retention: [{ stream: STREAM, maxLen: MAX_LEN }],
      retentionIntervalMs: INTERVAL_MS,
    }),
  ],
  providers: [Consumers, Archive],
})(AppModule);

const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
app.enableShutdownHooks();
const stats = app.get(ConsumerStats);
while (!['fast', 'slow'].every((group) => stats.get(STREAM, group)?.state === 'running')) {
  await sleep(10);
}
fs.writeSync(1, `READY ${process.pid}\n`);
