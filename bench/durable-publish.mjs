#!/usr/bin/env node
// node bench/durable-publish.mjs (after npm run build): StreamProducer.publish with and without
// { replicas: 1 } (docs/scale.md "Durable publish"), on a throw-away master and one replica of
// it on the same machine (`--replicaof`, free loopback ports, no persistence). Each figure: the
// publishes that resolved in BENCH_SECONDS (3) by `concurrency` callers awaiting one publish at a
// time; then publishMany of 100 entries with { replicas: 1 }. Loopback replica: the WAIT round
// trip is the cheapest it gets; over a network add the replica's round trip to every WAIT.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { redisCommand, startRedis } from './lib/redis-server.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'package.json'));
require('reflect-metadata');
const { NestFactory } = require('@nestjs/core');
const { Module } = require('@nestjs/common');
const { EchoStreamModule, StreamProducer } = require(join(root, 'dist/index.js'));

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const master = await startRedis();
const dir = mkdtempSync(join(tmpdir(), 'echo-bench-replica-'));
const server = redisCommand();
const replica = spawn(
  server.command,
  [
    ...server.args,
    '--port',
    String(master.port + 1),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--replicaof',
    '127.0.0.1',
    String(master.port),
  ],
  { stdio: 'ignore' },
);
const stopReplica = () => replica.kill('SIGKILL');
process.on('exit', stopReplica);
let app;
try {
  const until = Date.now() + 10_000;
  while (!/^slave0:.*state=online/m.test(await master.admin.info('replication'))) {
    if (Date.now() > until) throw new Error(`no replica online on port ${master.port + 1}`);
    await sleep(50);
  }
  class AppModule {}
  Module({ imports: [EchoStreamModule.forRoot({ connection: master.url })] })(AppModule);
  app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  const producer = app.get(StreamProducer);
  const rate = async (opts, concurrency) => {
    let n = 0;
    const end = Date.now() + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (Date.now() < end) {
          await producer.publish('bench-durable', { n }, opts);
          n++;
        }
      }),
    );
    return Math.round(n / SECONDS);
  };
  for (const concurrency of [1, 16]) {
    const plain = await rate(undefined, concurrency);
    const durable = await rate({ replicas: 1 }, concurrency);
    console.log(
      `concurrency ${concurrency}: plain ${plain} publishes/s, replicas: 1 ${durable} publishes/s`,
    );
  }
  let n = 0;
  const end = Date.now() + SECONDS * 1000;
  const batch = Array.from({ length: 100 }, (_, i) => ({ i }));
  while (Date.now() < end) {
    await producer.publishMany('bench-durable', batch, { replicas: 1 });
    n += batch.length;
  }
  console.log(`publishMany x100, replicas: 1, one caller: ${Math.round(n / SECONDS)} entries/s`);
} finally {
  await app?.close();
  stopReplica();
  await master.stop();
  rmSync(dir, { recursive: true, force: true });
}
