/**
 * Many handlers in one separate OS process (issue 15 tests): a Nest app context with the BUILT
 * package (`dist/index.js`) and ONE provider whose methods `h000`, `h001`, ... each consume one
 * stream, all in the same group.
 *
 *   node test/support/many-handlers-process.mjs        (run from the repository root)
 *
 * Environment:
 *   REDIS_URL        redis://127.0.0.1:<port>                                   (required)
 *   STREAMS          JSON array of stream names, one handler each                (required)
 *   GROUP            the group of every handler                                  (required)
 *   CONSUMER_NAME    the consumer name                                           (required)
 *   HANDLE_MS        how long each handler call takes                            (default 0)
 *   DEFAULTS         JSON of the module's `defaults`                             (default {})
 *   SHARED_READS     'true' / 'false': the `sharedReads` module option           (default: unset)
 *
 * Stdout, one line each, written synchronously (a SIGKILL right after cannot swallow it):
 *   READY <pid>                              every loop is 'running'
 *   START <index> <entryId> <attempts>       a handler call begins
 *   DONE <index> <entryId>                   a handler call returns
 */
import 'reflect-metadata';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { EchoStreamModule, StreamHandler, ConsumerStats } = require('../../dist/index.js');
const { Injectable, Module } = await import('@nestjs/common');
const { NestFactory } = await import('@nestjs/core');

function required(name) {
  const value = process.env[name];
  if (!value) {
    process.stderr.write(`many-handlers-process: ${name} is required\n`);
    process.exit(2);
  }
  return value;
}

const REDIS_URL = required('REDIS_URL');
const STREAMS = JSON.parse(required('STREAMS'));
const GROUP = required('GROUP');
const CONSUMER_NAME = required('CONSUMER_NAME');
const HANDLE_MS = Number(process.env.HANDLE_MS ?? 0);
const DEFAULTS = JSON.parse(process.env.DEFAULTS ?? '{}');

const say = (line) => fs.writeSync(1, `${line}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class ManyHandlers {}
STREAMS.forEach((stream, index) => {
  const key = `h${String(index).padStart(3, '0')}`;
  Object.defineProperty(ManyHandlers.prototype, key, {
    value: async function handle(message) {
      say(`START ${index} ${message.entryId} ${message.attempts}`);
      if (HANDLE_MS > 0) await sleep(HANDLE_MS);
      say(`DONE ${index} ${message.entryId}`);
    },
    writable: true,
    configurable: true,
  });
  const descriptor = Object.getOwnPropertyDescriptor(ManyHandlers.prototype, key);
  StreamHandler(stream, GROUP)(ManyHandlers.prototype, key, descriptor);
});
Injectable()(ManyHandlers);

const options = { connection: REDIS_URL, consumerName: CONSUMER_NAME, defaults: DEFAULTS };
if (process.env.SHARED_READS) options.sharedReads = process.env.SHARED_READS === 'true';
class AppModule {}
Module({ imports: [EchoStreamModule.forRoot(options)], providers: [ManyHandlers] })(AppModule);

const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
app.enableShutdownHooks();
const stats = app.get(ConsumerStats);
for (;;) {
  const snaps = stats.snapshot();
  if (snaps.length === STREAMS.length && snaps.every((s) => s.state === 'running')) break;
  await sleep(10);
}
say(`READY ${process.pid}`);
