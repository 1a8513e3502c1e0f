#!/usr/bin/env node
// node bench/effectively-once.mjs (after npm run build, ~3 min): what effectively once costs,
// as ratios to the plain paths measured in the same run, on one throw-away redis-server
// (free loopback port, no persistence):
// - publish: StreamProducer.publish with { idempotent: true } vs plain (a fresh branded id per
//   call, concurrency 1 and 16), and publishMany x100 (docs/publishing.md "Idempotent publish");
//   rounds: BENCH_ROUNDS (3), BENCH_SECONDS (2) per figure;
// - drain: one @StreamHandler (synchronous, per entry, defaults) over BENCH_N (50,000) pre-filled
//   entries with branded ids, plain vs { dedup: true } vs { newerWins } over 1,000 keys
//   (docs/delivery.md "Duplicates and stale replays"): every entry is new, so each is handled;
//   the cost is the records looked up before the handler and written with the XACK. Then two
//   pipeline stages that write each entry on to another stream (docs/exactly-once.md): `stage`
//   awaits StreamProducer.publish, `exactlyOnce` writes through m.tx, committed with the XACK;
//   the exactly-once stage as ratios to both (goals: >= 1.0x the stage, >= 0.7x plain). Each drain
//   runs in a fresh child process (bench/lib/skip-drain-child.mjs) on the same client setup, a
//   fresh group per drain; BENCH_DRAIN_ROUNDS (max(5, BENCH_ROUNDS)) rounds of the three, the
//   order rotated. The ratio is the median of each round's ratio to that round's plain drain
//   (paired: a busy moment of a shared machine hits both), with its [min-max]; CPU per entry
//   (the process and redis-server, from the first handler call to the empty PEL) is printed
//   beside, steadier than entries/s where other work shares the machine; BENCH_NODE_ARGS
//   ('--cpu-prof --cpu-prof-dir=DIR', space-separated): extra node flags of each drain's child;
// - memory: MEMORY USAGE summed over the index / record keys, per 1,000 ids (keys for newerWins).
// BENCH_EO_PARTS (publish,drain,memory): the parts run; BENCH_EO_VARIANTS: the drains run (plain
// always, the others of plain,dedup,newerWins,stage,exactlyOnce named).
// Rounds rotate the order; each figure is the median of its rounds.
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { accountPayload, makePayload } from './lib/payload.mjs';
import { foreignCpuWindow, startRedis } from './lib/redis-server.mjs';
import { median } from './lib/stats.mjs';
import { skipDrain } from './lib/skip-drain.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'package.json'));
require('reflect-metadata');
const { NestFactory } = require('@nestjs/core');
const { Module } = require('@nestjs/common');
// the library build measured (BENCH_LIB, as for bench/run.mjs): the drains' children load it too
const LIB = resolve(process.env.BENCH_LIB ?? join(root, 'dist/index.js'));
const { EchoStreamModule, StreamProducer, brandedId } = require(LIB);

const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const N = Number(process.env.BENCH_N ?? 50_000);
const DRAIN_ROUNDS = Number(process.env.BENCH_DRAIN_ROUNDS ?? Math.max(5, ROUNDS));
const KEYS = 1000;
const PARTS = new Set((process.env.BENCH_EO_PARTS ?? 'publish,drain,memory').split(','));
const WANTED = process.env.BENCH_EO_VARIANTS?.split(',');
const VARIANTS = ['plain', 'dedup', 'newerWins', 'stage', 'exactlyOnce'].filter(
  (v) => v === 'plain' || WANTED === undefined || WANTED.includes(v),
);
/** The drains' stream; the memory part counts the records its dedup-0 and newerWins-0 wrote. */
const STREAM = 'drain';
/** Extra node flags of each drain's child (BENCH_NODE_ARGS, space-separated: --cpu-prof ...). */
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
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
      `${SECONDS} s per publish figure, ${DRAIN_ROUNDS} drain rounds of ${fmt(N)} entries ` +
      `(${new Date().toISOString()})`,
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
  if (PARTS.has('publish')) {
    const published = new Map(publishCases.map(([name]) => [name, { plain: [], idem: [] }]));
    for (let r = 0; r < ROUNDS; r++) {
      for (const [name, run] of publishCases) {
        for (const idem of rotate([false, true], r)) {
          published.get(name)[idem ? 'idem' : 'plain'].push(await run(idem));
        }
      }
      await admin.flushall(); // streams and index keys of this round
    }
    console.log(
      '\npublish (entries/s, median [min-max] of rounds): plain | idempotent | ratio of medians',
    );
    for (const [name, { plain, idem }] of published) {
      const ratioOf = ratio(median(idem), median(plain));
      console.log(`  ${name}: ${spread(plain)} | ${spread(idem)} | ${ratioOf}x`);
    }
  }

  // ---- drain ---------------------------------------------------------------------------------
  if (PARTS.has('drain')) {
    for (let i = 0; i < N; i += 500) {
      const pipeline = admin.pipeline();
      for (let j = i; j < Math.min(N, i + 500); j++) {
        const data = JSON.stringify(accountPayload(j, KEYS));
        pipeline.xadd(STREAM, '*', 'id', brandedId(), 'data', data);
      }
      await pipeline.exec();
    }
    // the skip variants and the pipeline stages: a handler with no output (plain), one that awaits
    // StreamProducer.publish (stage, at-least-once) and one that writes through m.tx (exactlyOnce)
    const drained = new Map(VARIANTS.map((v) => [v, []]));
    const foreign = [];
    for (let r = 0; r < DRAIN_ROUNDS; r++) {
      for (const variant of rotate(VARIANTS, r)) {
        const group = `${variant}-${r}`;
        await admin.xgroup('CREATE', STREAM, group, '0');
        const window = foreignCpuWindow(redis.pid);
        const result = await drain(STREAM, group, variant);
        const share = window.end(result.procCpuSeconds);
        if (share !== null) foreign.push(share);
        drained.get(variant).push(result);
      }
    }
    const ratesOf = (variant) => drained.get(variant).map((d) => d.rate);
    const perEntry = (variant, field) => median(drained.get(variant).map((d) => d[field]));
    console.log(
      '\ndrain (entries/s, median [min-max] of rounds): figure | ratio to plain: median of the ' +
        "rounds' ratios [min-max], ratio of medians | CPU µs per entry: node, redis-server",
    );
    const plainRates = ratesOf('plain');
    for (const variant of VARIANTS) {
      const rates = ratesOf(variant);
      const paired = rates.map((rate, r) => rate / plainRates[r]);
      const ratios =
        variant === 'plain'
          ? '1.00x'
          : `${median(paired).toFixed(2)}x [${Math.min(...paired).toFixed(2)}-` +
            `${Math.max(...paired).toFixed(2)}], ${ratio(median(rates), median(plainRates))}x`;
      console.log(
        `  ${variant}: ${spread(rates)} | ${ratios} | ` +
          `${perEntry(variant, 'nodeCpuUs').toFixed(1)}, ${perEntry(variant, 'redisCpuUs').toFixed(1)}`,
      );
    }
    // exactly once as SPEC'd: against the same stage at-least-once, and against no output
    if (drained.has('stage') && drained.has('exactlyOnce')) {
      const stageRates = ratesOf('stage');
      const exactRates = ratesOf('exactlyOnce');
      const pairedTo = (base) => exactRates.map((rate, r) => rate / base[r]);
      const describe = (xs) =>
        `${median(xs).toFixed(2)}x [${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)}]`;
      console.log(
        `  exactlyOnce stage: ${describe(pairedTo(stageRates))} the at-least-once stage ` +
          `(awaited publish), ${describe(pairedTo(plainRates))} a stage with no output`,
      );
    }
    if (foreign.length > 0)
      console.log(
        `  (other work on the machine meanwhile: ${Math.round(median(foreign) * 100)}% of its CPU, ` +
          `median of the drains)`,
      );
  }

  // ---- memory --------------------------------------------------------------------------------
  if (PARTS.has('drain') && PARTS.has('memory')) {
    const usedMemory = async () =>
      Number(/^used_memory:(\d+)/m.exec(await admin.info('memory'))[1]);
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
  }
} finally {
  await producerApp?.close();
  await redis.stop();
}

/** Drains `group` of `stream` with the handler of `variant` in a child process (skip-drain.mjs). */
function drain(stream, group, variant) {
  const cfg = { lib: LIB, url: redis.url, stream, group, variant, n: N, redisPid: redis.pid };
  return skipDrain(cfg, NODE_ARGS);
}
