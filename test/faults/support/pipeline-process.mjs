/**
 * One process of a two-stage pipeline, for the exactly-once oracle (a Nest app of the BUILT
 * package, `dist/index.js`): stage 1 reads stream A (group `stage1`) and writes each entry on to
 * stream B and adds its amount to counter SUM1; stage 2 reads B (group `stage2`) and writes each on
 * to C and adds its amount to SUM2.
 *
 *   node test/faults/support/pipeline-process.mjs        (run from the repository root)
 *
 * Environment:
 *   REDIS_URL          redis://127.0.0.1:<port>                                  (required)
 *   CLUSTER_NODES      JSON [{ host, port }]: a Redis Cluster's startup nodes (REDIS_URL unused)
 *   CONSUMER_NAME      the consumer name in both groups                          (required)
 *   PIPELINE           JSON { a, b, c, sum1, sum2 }: the streams and counters    (required)
 *   EXACTLY_ONCE       '1': the stages write through m.tx (`exactlyOnce: true`); else they
 *                      publish with StreamProducer and INCRBY on their own connection, then return
 *                      (at-least-once: a crash between those writes and the XACK repeats them)
 *   HANDLE_MS          how long each handler call takes before it writes       (default 0)
 *   DEFAULTS           JSON of `defaults` (StreamHandlerOptions)                (default {})
 *   SHUTDOWN_TIMEOUT_MS module `shutdownTimeoutMs`                              (default 5000)
 *
 * Stdout protocol (the consumer fleet's): `READY <name> <pid>` once both loops run,
 * `START <id> <entryId> <attempts>` when a handler call begins, `DONE <id>` when it returns.
 */
import 'reflect-metadata';
import * as fs from 'node:fs';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cluster, Redis } from 'ioredis';
import pkg from '../../../dist/index.js';
import { required } from './child-env.mjs';

const { EchoStreamModule, StreamHandler, StreamProducer, ConsumerStats } = pkg;

const REDIS_URL = required('REDIS_URL');
const NAME = required('CONSUMER_NAME');
const { a: A, b: B, c: C, sum1: SUM1, sum2: SUM2 } = JSON.parse(required('PIPELINE'));
const EXACTLY_ONCE = process.env.EXACTLY_ONCE === '1';
const HANDLE_MS = Number(process.env.HANDLE_MS ?? 0);
const DEFAULTS = JSON.parse(process.env.DEFAULTS ?? '{}');
const SHUTDOWN_TIMEOUT_MS = Number(process.env.SHUTDOWN_TIMEOUT_MS ?? 5000);
const CLUSTER_NODES = process.env.CLUSTER_NODES ? JSON.parse(process.env.CLUSTER_NODES) : null;

function say(line) {
  // synchronous, so a SIGKILL right after cannot swallow it
  fs.writeSync(1, `${line}\n`);
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// the at-least-once stages' own connection for their counters
const counters = EXACTLY_ONCE
  ? null
  : CLUSTER_NODES
    ? new Cluster(CLUSTER_NODES, { redisOptions: { maxRetriesPerRequest: null } })
    : new Redis(REDIS_URL, { maxRetriesPerRequest: null });
counters?.on('error', () => undefined);

/** Stage `stage`: writes `payload` on to `next` and adds its amount to `sum`. */
async function forward(producer, m, next, sum) {
  say(`START ${m.id} ${m.entryId} ${m.attempts}`);
  if (HANDLE_MS > 0) await sleep(HANDLE_MS);
  if (EXACTLY_ONCE) {
    m.tx.publish(next, m.payload);
    m.tx.incrBy(sum, m.payload.amount);
  } else {
    await producer.publish(next, m.payload);
    await counters.incrby(sum, m.payload.amount);
  }
  say(`DONE ${m.id}`);
}

class Pipeline {
  constructor(producer) {
    this.producer = producer;
  }
  stage1(m) {
    return forward(this.producer, m, B, SUM1);
  }
  stage2(m) {
    return forward(this.producer, m, C, SUM2);
  }
}
const bind = (method, stream, group) =>
  StreamHandler(stream, group, { exactlyOnce: EXACTLY_ONCE })(
    Pipeline.prototype,
    method,
    Object.getOwnPropertyDescriptor(Pipeline.prototype, method),
  );
bind('stage1', A, 'stage1');
bind('stage2', B, 'stage2');
Injectable()(Pipeline);
Reflect.defineMetadata('design:paramtypes', [StreamProducer], Pipeline);

class AppModule {}
Module({
  imports: [
    EchoStreamModule.forRoot({
      ...(CLUSTER_NODES ? { cluster: { nodes: CLUSTER_NODES } } : { connection: REDIS_URL }),
      consumerName: NAME,
      defaults: DEFAULTS,
      shutdownTimeoutMs: SHUTDOWN_TIMEOUT_MS,
    }),
  ],
  providers: [Pipeline],
})(AppModule);

const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] });
app.enableShutdownHooks();
const stats = app.get(ConsumerStats);
const running = () =>
  [A, B].every((stream, i) => stats.get(stream, `stage${i + 1}`)?.state === 'running');
while (!running()) await sleep(10);
say(`READY ${NAME} ${process.pid}`);
