/**
 * A consumer as a separate OS process, for the fault suite: a tiny Nest app that loads the BUILT
 * package (`dist/index.js`, CommonJS) and consumes one stream with one `@StreamHandler`.
 *
 *   node test/faults/support/consumer-process.mjs        (run from the repository root)
 *
 * Behaviour comes from the environment:
 *   REDIS_URL            redis://127.0.0.1:<port>                         (required)
 *   STREAM, GROUP        what to consume                                  (required)
 *   CONSUMER_NAME        the consumer name in the group                   (required)
 *   LEDGER               file the handler appends one line per handled entry to (required)
 *   HANDLE_MS            how long each handler call takes                 (default 0)
 *   CRASH_AFTER          SIGKILL itself right after the N-th ledger write, before the handler
 *                        returns (so before any XACK of that entry)      (default: never)
 *   FAIL_ATTEMPTS        the handler throws on attempts 1..N of every entry, after writing an
 *                        `F` line (so each entry is retried N times)      (default 0)
 *   DEFAULTS             JSON of `defaults` (StreamHandlerOptions)        (default {})
 *   SHUTDOWN_TIMEOUT_MS  module `shutdownTimeoutMs`                       (default 5000)
 *
 * Ledger line (written with one write(2) on a file opened O_APPEND, BEFORE the handler returns):
 *   H <brandedId> <entryId> <consumer> <attempts> <startedAtMs> <endedAtMs> <pid>
 * and, for a failed attempt (FAIL_ATTEMPTS), before it throws:
 *   F <brandedId> <entryId> <consumer> <attempts> <startedAtMs> <failedAtMs> <pid> <dueAtMs>
 * where dueAt is when the retry policy of DEFAULTS.retry (fixed or exponential, no jitter) makes
 * the next attempt due (failedAt when there is no such policy).
 *
 * Stdout protocol (one line each): `READY <consumer> <pid>` once the loop is running,
 * `START <brandedId> <entryId> <attempts>` when a handler call begins, `DONE <brandedId>` after
 * its ledger line is written, `FAIL <brandedId> <entryId> <attempts>` before a failing call throws. SIGTERM is a graceful close (`enableShutdownHooks`).
 */
import 'reflect-metadata';
import * as fs from 'node:fs';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pkg from '../../../dist/index.js';
import { required } from './child-env.mjs';

const { EchoStreamModule, StreamHandler, ConsumerStats } = pkg;

const REDIS_URL = required('REDIS_URL');
const STREAM = required('STREAM');
const GROUP = required('GROUP');
const CONSUMER_NAME = required('CONSUMER_NAME');
const LEDGER = required('LEDGER');
const HANDLE_MS = Number(process.env.HANDLE_MS ?? 0);
const CRASH_AFTER = process.env.CRASH_AFTER ? Number(process.env.CRASH_AFTER) : 0;
const FAIL_ATTEMPTS = Number(process.env.FAIL_ATTEMPTS ?? 0);
const DEFAULTS = JSON.parse(process.env.DEFAULTS ?? '{}');
const SHUTDOWN_TIMEOUT_MS = Number(process.env.SHUTDOWN_TIMEOUT_MS ?? 5000);

const ledger = fs.openSync(LEDGER, 'a'); // O_APPEND: every write lands at the end, whole
let handled = 0;

function say(line) {
  // synchronous, so a SIGKILL right after cannot swallow it
  fs.writeSync(1, `${line}\n`);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The delay DEFAULTS.retry plans after a failure on `attempt` (0 when it cannot tell). */
function plannedDelay(attempt) {
  const retry = DEFAULTS.retry;
  if (!retry) return 0;
  if (retry.type === 'fixed') return retry.delayMs;
  if (retry.type === 'exponential') {
    const base = retry.initialMs * (retry.factor ?? 2) ** (attempt - 1);
    return Math.min(retry.maxMs ?? 60_000, base);
  }
  return 0;
}

class Handler {
  async handle(message) {
    const startedAt = Date.now();
    say(`START ${message.id} ${message.entryId} ${message.attempts}`);
    if (HANDLE_MS > 0) await sleep(HANDLE_MS);
    if (message.attempts <= FAIL_ATTEMPTS) {
      const failedAt = Date.now();
      fs.writeSync(
        ledger,
        `F ${message.id} ${message.entryId} ${CONSUMER_NAME} ${message.attempts} ` +
          `${startedAt} ${failedAt} ${process.pid} ${failedAt + plannedDelay(message.attempts)}\n`,
      );
      say(`FAIL ${message.id} ${message.entryId} ${message.attempts}`);
      throw new Error(`planned failure of attempt ${message.attempts}`);
    }
    const line =
      `H ${message.id} ${message.entryId} ${CONSUMER_NAME} ${message.attempts} ` +
      `${startedAt} ${Date.now()} ${process.pid}\n`;
    fs.writeSync(ledger, line);
    handled++;
    say(`DONE ${message.id}`);
    if (CRASH_AFTER > 0 && handled >= CRASH_AFTER) {
      // handled and recorded, never acked: the loop acks only after this returns
      process.kill(process.pid, 'SIGKILL');
      await new Promise(() => undefined);
    }
  }
}
StreamHandler(STREAM, GROUP)(
  Handler.prototype,
  'handle',
  Object.getOwnPropertyDescriptor(Handler.prototype, 'handle'),
);
Injectable()(Handler);

class AppModule {}
Module({
  imports: [
    EchoStreamModule.forRoot({
      connection: REDIS_URL,
      consumerName: CONSUMER_NAME,
      shutdownTimeoutMs: SHUTDOWN_TIMEOUT_MS,
      defaults: DEFAULTS,
    }),
  ],
  providers: [Handler],
})(AppModule);

const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
app.enableShutdownHooks();

const stats = app.get(ConsumerStats);
for (;;) {
  if (stats.get(STREAM, GROUP)?.state === 'running') break;
  await sleep(10);
}
say(`READY ${CONSUMER_NAME} ${process.pid}`);
