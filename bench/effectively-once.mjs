#!/usr/bin/env node
// node bench/effectively-once.mjs (after npm run build, ~1.5 min): what effectively once costs,
// as ratios to the plain paths measured in the same run, on one throw-away redis-server
// (free loopback port, no persistence):
// - publish: StreamProducer.publish with { idempotent: true } vs plain (a fresh branded id per
//   call, concurrency 1 and 16), and publishMany x100 (docs/publishing.md "Idempotent publish");
// - drain: one @StreamHandler (synchronous, per entry, defaults) over BENCH_N (20,000) pre-filled
//   entries with branded ids, plain vs { dedup: true } vs { newerWins } over 1,000 keys
//   (docs/delivery.md "Duplicates and stale replays"): every entry is new, so each is handled;
//   the cost is the record read before the handler and the record written with the XACK;
// - memory: MEMORY USAGE summed over the index / record keys, per 1,000 ids (keys for newerWins).
// Rounds (BENCH_ROUNDS, 3) rotate the order; each figure is the median of its rounds.
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makePayload } from './lib/payload.mjs';
import { startRedis } from './lib/redis-server.mjs';
import { median } from './lib/stats.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'package.json'));
require('reflect-metadata');
const { NestFactory } = require('@nestjs/core');
const { Injectable, Module } = require('@nestjs/common');
const { EchoStreamModule, StreamHandler, StreamProducer, brandedId } = require(
  join(root, 'dist/index.js'),
);

const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const N = Number(process.env.BENCH_N ?? 20_000);
const KEYS = 1000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rotate = (list, r) => list.map((_, i) => list[(i + r) % list.length]);
const fmt = (x) => Math.round(x).toLocaleString('en-US');
const ratio = (a, b) => (a / b).toFixed(2);
/** `median [min-max]` of per-round rates. */
const spread = (xs) => `${fmt(median(xs))} [${fmt(Math.min(...xs))}-${fmt(Math.max(...xs))}]`;

const redis = await startRedis();
const { admin } = redis;
let producerApp;
try {
  const info = await admin.info('server');
  const version = /^redis_version:(.*)$/m.exec(info)?.[1]?.trim();
  console.log(
    `effectively-once bench: Node ${process.version}, redis-server ${version}, ${ROUNDS} rounds, ` +
      `${SECONDS} s per publish figure, drain of ${fmt(N)} entries (${new Date().toISOString()})`,
  );

  // ---- publish -------------------------------------------------------------------------------
  class ProducerModule {}
  Module({ imports: [EchoStreamModule.forRoot({ connection: redis.url })] })(ProducerModule);
  producerApp = await NestFactory.createApplicationContext(ProducerModule, { logger: false });
  const producer = producerApp.get(StreamProducer);
  const payload = makePayload(1);
  const publishRate = async (idempotent, concurrency) => {
    let n = 0;
    const stream = `pub-${idempotent ? 'idem' : 'plain'}`;
    const end = Date.now() + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (Date.now() < end) {
          await producer.publish(stream, payload, { idempotent });
          n++;
        }
      }),
    );
    return n / SECONDS;
  };
  const batch = Array.from({ length: 100 }, () => payload);
  const manyRate = async (idempotent) => {
    let n = 0;
    const stream = `many-${idempotent ? 'idem' : 'plain'}`;
    const end = Date.now() + SECONDS * 1000;
    while (Date.now() < end) {
      await producer.publishMany(stream, batch, { idempotent });
      n += batch.length;
    }
    return n / SECONDS;
  };
  const publishCases = [
    ['publish, concurrency 1', (idem) => publishRate(idem, 1)],
    ['publish, concurrency 16', (idem) => publishRate(idem, 16)],
    ['publishMany x100, one caller', (idem) => manyRate(idem)],
  ];
  const published = new Map(publishCases.map(([name]) => [name, { plain: [], idem: [] }]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, run] of publishCases) {
      for (const idem of rotate([false, true], r)) {
        published.get(name)[idem ? 'idem' : 'plain'].push(await run(idem));
      }
    }
    await admin.flushall(); // streams and index keys of this round
  }
  console.log('\npublish (entries/s, median [min-max] of rounds): plain | idempotent | ratio of medians');
  for (const [name, { plain, idem }] of published) {
    const ratioOf = ratio(median(idem), median(plain));
    console.log(`  ${name}: ${spread(plain)} | ${spread(idem)} | ${ratioOf}x`);
  }

  // ---- drain ---------------------------------------------------------------------------------
  const STREAM = 'drain';
  for (let i = 0; i < N; i += 500) {
    const pipeline = admin.pipeline();
    for (let j = i; j < Math.min(N, i + 500); j++) {
      const data = JSON.stringify({ ...makePayload(j), account: `acct-${j % KEYS}` });
      pipeline.xadd(STREAM, '*', 'id', brandedId(), 'data', data);
    }
    await pipeline.exec();
  }
  const variants = {
    plain: {},
    dedup: { dedup: true },
    newerWins: { newerWins: (m) => m.payload.account },
  };
  const drained = new Map(Object.keys(variants).map((v) => [v, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const variant of rotate(Object.keys(variants), r)) {
      const group = `${variant}-${r}`;
      await admin.xgroup('CREATE', STREAM, group, '0');
      drained.get(variant).push(await drain(STREAM, group, variants[variant]));
    }
  }
  console.log('\ndrain (entries/s, median [min-max] of rounds): figure | ratio of medians to plain');
  const plainDrain = median(drained.get('plain'));
  for (const [variant, rates] of drained) {
    console.log(`  ${variant}: ${spread(rates)} | ${ratio(median(rates), plainDrain)}x`);
  }

  // ---- memory --------------------------------------------------------------------------------
  const usedMemory = async () => Number(/^used_memory:(\d+)/m.exec(await admin.info('memory'))[1]);
  await producer.publish('memory', payload); // the stream exists before the measure
  const streamBefore = Number(await admin.call('MEMORY', 'USAGE', 'memory'));
  const usedBefore = await usedMemory();
  await producer.publishMany(
    'memory',
    Array.from({ length: 1000 }, () => payload),
    { idempotent: true },
  );
  const streamGrowth = Number(await admin.call('MEMORY', 'USAGE', 'memory')) - streamBefore;
  const indexUsed = (await usedMemory()) - usedBefore - streamGrowth;
  const perThousand = async (pattern, count) => {
    let cursor = '0';
    let bytes = 0;
    let keys = 0;
    do {
      const [next, found] = await admin.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      for (const key of found) {
        bytes += Number(await admin.call('MEMORY', 'USAGE', key));
        keys++;
      }
    } while (cursor !== '0');
    return { bytes: (bytes * 1000) / count, keys };
  };
  const idem = await perThousand('{memory}:echo-idem:*', 1000);
  const dedup = await perThousand(`{${STREAM}}:echo-dedup::dedup-0:*`, N);
  const newest = await perThousand(`{${STREAM}}:echo-newest::newerWins-0:*`, KEYS);
  console.log('\nmemory (MEMORY USAGE of the keys, 24-character branded ids):');
  console.log(
    `  idempotent publish index: ${fmt(idem.bytes)} bytes per 1,000 ids (${idem.keys} keys); ` +
      `used_memory grew ${fmt(indexUsed)} bytes beyond the stream's own growth (keyspace and expiry tables included)`,
  );
  console.log(`  dedup records: ${fmt(dedup.bytes)} bytes per 1,000 ids (${dedup.keys} keys)`);
  console.log(
    `  newerWins records: ${fmt(newest.bytes)} bytes per 1,000 keys (${newest.keys} keys, one per key)`,
  );
} finally {
  await producerApp?.close();
  await redis.stop();
}

/** Drains `group` of `stream` with one handler of `options`; entries/s from first call to empty PEL. */
async function drain(stream, group, options) {
  let handled = 0;
  let first = 0;
  class Handler {
    handle() {
      if (handled++ === 0) first = performance.now();
    }
  }
  StreamHandler(stream, group, options)(
    Handler.prototype,
    'handle',
    Object.getOwnPropertyDescriptor(Handler.prototype, 'handle'),
  );
  Injectable()(Handler);
  class DrainModule {}
  Module({
    imports: [EchoStreamModule.forRoot({ connection: redis.url })],
    providers: [Handler],
  })(DrainModule);
  const app = await NestFactory.createApplicationContext(DrainModule, { logger: false });
  try {
    while (handled < N) await sleep(2);
    for (;;) {
      const [pending] = await admin.xpending(stream, group);
      if (Number(pending) === 0) break;
      await sleep(2);
    }
    return N / ((performance.now() - first) / 1000);
  } finally {
    await app.close();
  }
}
