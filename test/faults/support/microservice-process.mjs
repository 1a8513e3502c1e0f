/**
 * A Nest microservice as a separate OS process, for the fault suite: the BUILT transport
 * (`dist/microservices/index.js`, CommonJS) under `NestFactory.createMicroservice` with one
 * `@EventPattern` handler. Same environment, ledger and stdout protocol as consumer-process.mjs,
 * so `ConsumerProcess` (consumer-fleet.ts, `script: MICROSERVICE_SCRIPT`) and the oracle drive it.
 *
 *   node test/faults/support/microservice-process.mjs        (run from the repository root)
 *
 *   REDIS_URL            redis://127.0.0.1:<port>                                   (required)
 *   STREAM               the pattern (its stream)                                    (required)
 *   GROUP                the server's `group`                                        (required)
 *   CONSUMER_NAME        the server's `consumerName`                                 (required)
 *   LEDGER               file the handler appends one `H` line per handled event to  (required)
 *   HANDLE_MS            how long each handler call takes                            (default 0)
 *   DEFAULTS             JSON of the server's `defaults` (StreamHandlerOptions)      (default {})
 *   SHUTDOWN_TIMEOUT_MS  the server's `shutdownTimeoutMs`                            (default 5000)
 *
 * Ledger line (one write(2) on a file opened O_APPEND, after the handler's work, before it
 * returns, so before the entry's XACK):
 *   H <brandedId> <entryId> <consumer> <attempts> <startedAtMs> <endedAtMs> <pid>
 * Stdout: `READY <consumer> <pid>` once `listen()` resolved, `START <brandedId> <entryId>
 * <attempts>` when a handler call begins, `DONE <brandedId>` after its ledger line.
 */
import 'reflect-metadata';
import * as fs from 'node:fs';
import { Controller, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern } from '@nestjs/microservices';
import ms from '../../../dist/microservices/index.js';
import { required } from './child-env.mjs';

const { EchoStreamServer } = ms;

const REDIS_URL = required('REDIS_URL');
const STREAM = required('STREAM');
const GROUP = required('GROUP');
const CONSUMER_NAME = required('CONSUMER_NAME');
const LEDGER = required('LEDGER');
const HANDLE_MS = Number(process.env.HANDLE_MS ?? 0);
const DEFAULTS = JSON.parse(process.env.DEFAULTS ?? '{}');
const SHUTDOWN_TIMEOUT_MS = Number(process.env.SHUTDOWN_TIMEOUT_MS ?? 5000);

const ledger = fs.openSync(LEDGER, 'a'); // O_APPEND: every write lands at the end, whole

function say(line) {
  // synchronous, so a SIGKILL right after cannot swallow it
  fs.writeSync(1, `${line}\n`);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class Events {
  async handle(ctx) {
    const startedAt = Date.now();
    say(`START ${ctx.getId()} ${ctx.getEntryId()} ${ctx.getAttempts()}`);
    if (HANDLE_MS > 0) await sleep(HANDLE_MS);
    fs.writeSync(
      ledger,
      `H ${ctx.getId()} ${ctx.getEntryId()} ${CONSUMER_NAME} ${ctx.getAttempts()} ` +
        `${startedAt} ${Date.now()} ${process.pid}\n`,
    );
    say(`DONE ${ctx.getId()}`);
  }
}
const method = Object.getOwnPropertyDescriptor(Events.prototype, 'handle');
Ctx()(Events.prototype, 'handle', 0);
EventPattern(STREAM)(Events.prototype, 'handle', method);
Controller()(Events);

class AppModule {}
Module({ controllers: [Events] })(AppModule);

const app = await NestFactory.createMicroservice(AppModule, {
  strategy: new EchoStreamServer({
    connection: REDIS_URL,
    group: GROUP,
    consumerName: CONSUMER_NAME,
    shutdownTimeoutMs: SHUTDOWN_TIMEOUT_MS,
    defaults: DEFAULTS,
  }),
  logger: ['error', 'warn'],
});
app.enableShutdownHooks();
await app.listen();
say(`READY ${CONSUMER_NAME} ${process.pid}`);
