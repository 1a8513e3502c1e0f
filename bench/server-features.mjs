#!/usr/bin/env node
// node bench/server-features.mjs (after npm run build and npm run servers; ~4 min): what the newer
// server verbs buy (docs/compatibility.md "Server features"), as ratios measured in one run on one
// throw-away server of the build ECHO_SERVER names (default redis86: Redis 8.6):
// - drain: one @StreamHandler (synchronous, per entry, defaults) over BENCH_N (50,000) pre-filled
//   entries, each drain on a stream of its own: `plain` (no deletion), `deleteOnAck: true` on the
//   server's verbs (XACKDEL, serverFeatures 'auto') and on the Redis 7 path (XACK + XDEL,
//   serverFeatures 'baseline'). BENCH_ROUNDS (5) rounds, the order rotated; each ratio is the
//   median of the rounds' ratios to that round's plain drain [min-max], with the CPU per entry of
//   the process and of redis-server beside; then two drains of a dead peer's entries (all N read
//   by a consumer that never acks, idle after minIdleMs): reclaimed by the drain's reads
//   (XREADGROUP ... CLAIM, serverFeatures 'auto') and by the XAUTOCLAIM sweep ('baseline');
// - idempotent publish: StreamProducer.publish with { idempotent: true } (a fresh branded id per
//   call, concurrency 1 and 16) and publishMany x100, through the server's IDMP (serverFeatures
//   'auto') and through the script (serverFeatures 'baseline'), each beside a plain publish of the
//   same producer; BENCH_PUBLISH_SECONDS (2) per figure, BENCH_ROUNDS rounds, the order rotated,
//   ratios as medians of the rounds' ratios [min-max].
// On Redis 8.6 a Redis 7.0 (the redis-server on PATH) runs beside it, and each round drains a
// plain stream there too: Redis 8.6 against Redis 7.0 as a paired ratio. ECHO_SERVER=redis7 runs
// the whole bench on Redis 7.0 (the Redis 7 path under 'auto' too).
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makePayload } from './lib/payload.mjs';
import { startRedis } from './lib/redis-server.mjs';
import { skipDrain } from './lib/skip-drain.mjs';
import { median } from './lib/stats.mjs';

process.env.ECHO_SERVER ??= 'redis86';
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'package.json'));
require('reflect-metadata');
const { NestFactory } = require('@nestjs/core');
const { Module } = require('@nestjs/common');
const LIB = resolve(process.env.BENCH_LIB ?? join(root, 'dist/index.js'));
const { EchoStreamModule, StreamProducer, brandedId } = require(LIB);

const N = Number(process.env.BENCH_N ?? 50_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const PUBLISH_SECONDS = Number(process.env.BENCH_PUBLISH_SECONDS ?? 2);
const rotate = (list, r) => list.map((_, i) => list[(i + r) % list.length]);
const fmt = (x) => Math.round(x).toLocaleString('en-US');
const spread = (xs) => `${fmt(median(xs))} [${fmt(Math.min(...xs))}-${fmt(Math.max(...xs))}]`;
const describe = (xs) =>
  `${median(xs).toFixed(2)}x [${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)}]`;

/**
 * The drains measured: a name, the handler variant of skip-drain-child.mjs, the module option;
 * `deadPeer`: every entry is first read by a consumer that never acks (a dead peer), and the
 * drain reclaims them once idle (by its reads with CLAIM, or by the XAUTOCLAIM sweep).
 */
const DRAINS = [
  { name: 'plain', variant: 'plain', serverFeatures: 'auto' },
  { name: 'deleteOnAck (server verbs)', variant: 'deleteOnAck', serverFeatures: 'auto' },
  { name: 'deleteOnAck (Redis 7 path)', variant: 'deleteOnAck', serverFeatures: 'baseline' },
  {
    name: "dead peer's entries (read's CLAIM)",
    variant: 'reclaimByRead',
    serverFeatures: 'auto',
    deadPeer: true,
  },
  {
    name: "dead peer's entries (XAUTOCLAIM sweep)",
    variant: 'reclaimBySweep',
    serverFeatures: 'baseline',
    deadPeer: true,
  },
];

const redis = await startRedis();
const { admin } = redis;
/**
 * On Redis 8.6, a Redis 7.0 beside it (the redis-server on PATH): each round also drains a plain
 * stream there, so Redis 8.6 against Redis 7.0 is a paired ratio of the same run.
 */
const beside = process.env.ECHO_SERVER === 'redis86' ? await startRedis('redis7') : null;
/** The producer apps of the publish figures, closed at the end. */
const apps = [];
try {
  const info = await admin.info('server');
  const version = /^redis_version:(.*)$/m.exec(info)?.[1]?.trim();
  console.log(
    `server-features bench: Node ${process.version}, ${process.env.ECHO_SERVER} (redis_version ` +
      `${version}), ${ROUNDS} rounds of ${fmt(N)} entries per drain (${new Date().toISOString()})`,
  );
  /**
   * One drain of `drain` on `server` (its `admin`, `url`, `pid`) over a stream of its own, filled
   * (and read by a dead peer when `drain.deadPeer`) first, deleted after; its figures.
   */
  const drainOn = async (server, stream, drain) => {
    for (let i = 0; i < N; i += 500) {
      const pipeline = server.admin.pipeline();
      for (let j = i; j < Math.min(N, i + 500); j++)
        pipeline.xadd(stream, '*', 'id', brandedId(), 'data', JSON.stringify(makePayload(j)));
      await pipeline.exec();
    }
    await server.admin.xgroup('CREATE', stream, 'g', '0');
    if (drain.deadPeer) await server.admin.xreadgroup('GROUP', 'g', 'dead', 'STREAMS', stream, '>');
    const { variant, serverFeatures } = drain;
    const cfg = { lib: LIB, url: server.url, stream, group: 'g', n: N, redisPid: server.pid };
    const result = await skipDrain({ ...cfg, variant, serverFeatures });
    const left = await server.admin.xlen(stream);
    if (variant === 'deleteOnAck' && left !== 0)
      throw new Error(`${drain.name}: ${left} entries left in the stream`);
    await server.admin.del(stream);
    return result;
  };
  // without CLAIM (Redis 7, Valkey) only the sweep can bring a dead peer's entries
  const docs = JSON.stringify(await admin.call('COMMAND', 'DOCS', 'XREADGROUP'));
  const drains = docs.includes('"CLAIM"') ? DRAINS : DRAINS.slice(0, 3);
  const results = new Map(DRAINS.map((d) => [d.name, []]));
  const redis7Plain = [];
  for (let r = 0; r < ROUNDS; r++) {
    for (const drain of rotate(drains, r)) {
      const stream = `drain-${r}-${drain.variant}-${drain.serverFeatures}`;
      results.get(drain.name).push(await drainOn(redis, stream, drain));
    }
    if (beside) redis7Plain.push(await drainOn(beside, `drain-${r}-redis7`, DRAINS[0]));
  }
  const plain = results.get('plain').map((d) => d.rate);
  console.log(
    '\ndrain (entries/s, median [min-max]) | ratio to plain (median of rounds [min-max]) | ' +
      'CPU µs per entry: node, redis-server',
  );
  for (const { name } of drains) {
    const runs = results.get(name);
    const rates = runs.map((d) => d.rate);
    const ratios = rates.map((rate, r) => rate / plain[r]);
    const cpu = (field) => median(runs.map((d) => d[field])).toFixed(1);
    console.log(
      `  ${name}: ${spread(rates)} | ${describe(ratios)} | ${cpu('nodeCpuUs')}, ${cpu('redisCpuUs')}`,
    );
  }
  const native = results.get(DRAINS[1].name).map((d) => d.rate);
  const fallback = results.get(DRAINS[2].name).map((d) => d.rate);
  console.log(
    `  deleteOnAck, server verbs / Redis 7 path: ${describe(native.map((rate, r) => rate / fallback[r]))}`,
  );
  const [byRead, bySweep] = DRAINS.slice(3).map((d) => results.get(d.name).map((x) => x.rate));
  if (byRead.length > 0)
    console.log(
      `  dead peer's entries, read's CLAIM / XAUTOCLAIM sweep: ${describe(byRead.map((rate, r) => rate / bySweep[r]))}`,
    );
  if (beside) {
    const on7 = redis7Plain.map((d) => d.rate);
    const cpu = (field) => median(redis7Plain.map((d) => d[field])).toFixed(1);
    console.log(
      `  plain on Redis 7.0 (beside, same rounds): ${spread(on7)} | ${cpu('nodeCpuUs')}, ` +
        `${cpu('redisCpuUs')} µs per entry; Redis 8.6 / Redis 7.0: ` +
        describe(plain.map((rate, r) => rate / on7[r])),
    );
  }
  await publishFigures();
} finally {
  await Promise.all(apps.map((app) => app.close()));
  await redis.stop();
  await beside?.stop();
}

/** The producer of an app of its own with `serverFeatures`. */
async function producerWith(serverFeatures) {
  class ProducerModule {}
  Module({ imports: [EchoStreamModule.forRoot({ connection: redis.url, serverFeatures })] })(
    ProducerModule,
  );
  const app = await NestFactory.createApplicationContext(ProducerModule, { logger: false });
  apps.push(app);
  return app.get(StreamProducer);
}

/** Idempotent publishes through IDMP and through the script, each beside plain ones. */
async function publishFigures() {
  const producers = { auto: await producerWith('auto'), baseline: await producerWith('baseline') };
  const payload = makePayload(1);
  const batch = Array.from({ length: 100 }, () => payload);
  /** Entries per second of `call` for PUBLISH_SECONDS, `concurrency` callers, `per` each call. */
  const rate = async (call, concurrency, per) => {
    let n = 0;
    const end = Date.now() + PUBLISH_SECONDS * 1000;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (Date.now() < end) {
          await call();
          n += per;
        }
      }),
    );
    return n / PUBLISH_SECONDS;
  };
  const CASES = [
    { name: 'publish, concurrency 1', concurrency: 1, many: false },
    { name: 'publish, concurrency 16', concurrency: 16, many: false },
    { name: 'publishMany x100, one caller', concurrency: 1, many: true },
  ];
  const WAYS = [
    { name: 'plain', mode: 'auto', idempotent: false },
    { name: 'IDMP', mode: 'auto', idempotent: true },
    { name: 'script', mode: 'baseline', idempotent: true },
  ];
  const got = new Map(CASES.flatMap((c) => WAYS.map((w) => [`${c.name}/${w.name}`, []])));
  let paths = '';
  const iidsAdded = async (stream) => {
    const flat = await admin.call('XINFO', 'STREAM', stream);
    const at = flat.indexOf('iids-added');
    return at < 0 ? 0 : flat[at + 1];
  };
  for (let r = 0; r < ROUNDS; r++) {
    for (const c of CASES) {
      for (const w of rotate(WAYS, r)) {
        const producer = producers[w.mode];
        const stream = `pub-${r}-${w.name}`;
        const call = c.many
          ? () => producer.publishMany(stream, batch, { idempotent: w.idempotent })
          : () => producer.publish(stream, payload, { idempotent: w.idempotent });
        got.get(`${c.name}/${w.name}`).push(await rate(call, c.concurrency, c.many ? 100 : 1));
      }
    }
    if (r === 0)
      paths = `ids IDMP kept: ${await iidsAdded(`pub-0-IDMP`)} on the IDMP path, ${await iidsAdded(`pub-0-script`)} on the script's`;
    await admin.flushall(); // streams and index keys of this round
  }
  console.log(
    `\nidempotent publish (entries/s, median [min-max]) | IDMP / script | each / plain ` +
      `(medians of the rounds' ratios [min-max]; round 1's ${paths})`,
  );
  for (const c of CASES) {
    const [plain, idmp, script] = WAYS.map((w) => got.get(`${c.name}/${w.name}`));
    const per = (xs, ys) => describe(xs.map((x, r) => x / ys[r]));
    console.log(
      `  ${c.name}: plain ${spread(plain)}, IDMP ${spread(idmp)}, script ${spread(script)} | ` +
        `${per(idmp, script)} | IDMP ${per(idmp, plain)}, script ${per(script, plain)}`,
    );
  }
}
