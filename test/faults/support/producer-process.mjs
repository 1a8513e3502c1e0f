/**
 * A producer as a separate OS process, for the fault suite: a tiny Nest app context that loads the
 * BUILT package (`dist/index.js`) and publishes with `producer: { idempotent: true }`, retrying
 * every failed publish under the same branded id until one answers (what docs/publishing.md
 * "Idempotent publish" tells a caller to do with `EchoStreamPublishError`).
 *
 *   node test/faults/support/producer-process.mjs        (run from the repository root)
 *
 * Behaviour comes from the environment:
 *   REDIS_URL          where to connect (a TcpProxy the test cuts)                  (required)
 *   STREAM             where to publish                                              (required)
 *   COUNT              how many ids to publish                                       (required)
 *   CONCURRENCY        publishes in flight at once                                   (default 4)
 *   BATCH              ids per call: 1 uses publish, more publishMany with `ids`     (default 1)
 *   PUBLISH_TIMEOUT_MS module `publishTimeoutMs`                                     (default 400)
 *   RATE               ids per second to start at most (0: as fast as answers come)  (default 0)
 *
 * Stdout protocol (one line each, written synchronously):
 *   `ERR <id> <written> <attempt>` for every failed attempt (`written`: false | unknown | true),
 *   `ACK <id> <entryId> <attempts> <lastAttemptStartedAtMs>` once a publish of the id answered,
 *   `DONE <count>` when every id is acknowledged (then the process exits 0).
 */
import 'reflect-metadata';
import * as fs from 'node:fs';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pkg from '../../../dist/index.js';
import { required } from './child-env.mjs';

const { EchoStreamModule, StreamProducer, EchoStreamPublishError, brandedId } = pkg;

const REDIS_URL = required('REDIS_URL');
const STREAM = required('STREAM');
const COUNT = Number(required('COUNT'));
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 4);
const BATCH = Number(process.env.BATCH ?? 1);
const PUBLISH_TIMEOUT_MS = Number(process.env.PUBLISH_TIMEOUT_MS ?? 400);
const RATE = Number(process.env.RATE ?? 0);

const say = (line) => fs.writeSync(1, `${line}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class AppModule {}
Module({
  imports: [
    EchoStreamModule.forRoot({
      connection: REDIS_URL,
      publishTimeoutMs: PUBLISH_TIMEOUT_MS,
      producer: { idempotent: true },
    }),
  ],
})(AppModule);

const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error'] });
const producer = app.get(StreamProducer);

/** Publishes `ids` (one call) until a call answers; every attempt under the same ids. */
async function publishUntilAnswered(ids) {
  for (let attempt = 1; ; attempt++) {
    const startedAt = Date.now();
    try {
      const receipts =
        ids.length === 1
          ? [await producer.publish(STREAM, { n: ids[0] }, { id: ids[0] })]
          : await producer.publishMany(
              STREAM,
              ids.map((id) => ({ n: id })),
              { ids },
            );
      for (const r of receipts) say(`ACK ${r.id} ${r.entryId} ${attempt} ${startedAt}`);
      return;
    } catch (err) {
      if (!(err instanceof EchoStreamPublishError)) throw err;
      for (const id of ids) say(`ERR ${id} ${String(err.written)} ${attempt}`);
      await sleep(20 + Math.random() * 80);
    }
  }
}

let next = 0;
const batches = [];
while (next < COUNT) {
  const size = Math.min(BATCH, COUNT - next);
  batches.push(Array.from({ length: size }, () => brandedId()));
  next += size;
}
let taken = 0;
const started = Date.now();
await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    while (taken < batches.length) {
      const index = taken++;
      const due = RATE > 0 ? started + (index * BATCH * 1000) / RATE : 0;
      if (due > Date.now()) await sleep(due - Date.now());
      await publishUntilAnswered(batches[index]);
    }
  }),
);
say(`DONE ${COUNT}`);
await app.close();
process.exit(0);
