#!/usr/bin/env node
// node bench/server-features.mjs (after npm run build and npm run servers; ~1 min): what the newer
// server verbs buy (docs/compatibility.md "Server features"), as ratios measured in one run on one
// throw-away server of the build ECHO_SERVER names (default redis86: Redis 8.6):
// - drain: one @StreamHandler (synchronous, per entry, defaults) over BENCH_N (50,000) pre-filled
//   entries, each drain on a stream of its own: `plain` (no deletion), `deleteOnAck: true` on the
//   server's verbs (XACKDEL, serverFeatures 'auto') and on the Redis 7 path (XACK + XDEL,
//   serverFeatures 'baseline'). BENCH_ROUNDS (5) rounds, the order rotated; each ratio is the
//   median of the rounds' ratios to that round's plain drain [min-max], with the CPU per entry of
//   the process and of redis-server beside.
// Run it with ECHO_SERVER=redis7 to compare Redis 8.6 against Redis 7.0 (the same figures there
// take the Redis 7 path under 'auto' too).
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
const LIB = resolve(process.env.BENCH_LIB ?? join(root, 'dist/index.js'));
const { brandedId } = require(LIB);

const N = Number(process.env.BENCH_N ?? 50_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const rotate = (list, r) => list.map((_, i) => list[(i + r) % list.length]);
const fmt = (x) => Math.round(x).toLocaleString('en-US');
const spread = (xs) => `${fmt(median(xs))} [${fmt(Math.min(...xs))}-${fmt(Math.max(...xs))}]`;
const describe = (xs) =>
  `${median(xs).toFixed(2)}x [${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)}]`;

/** The drains measured: a name, the handler variant of skip-drain-child.mjs, the module option. */
const DRAINS = [
  { name: 'plain', variant: 'plain', serverFeatures: 'auto' },
  { name: 'deleteOnAck (server verbs)', variant: 'deleteOnAck', serverFeatures: 'auto' },
  { name: 'deleteOnAck (Redis 7 path)', variant: 'deleteOnAck', serverFeatures: 'baseline' },
];

const redis = await startRedis();
const { admin } = redis;
try {
  const info = await admin.info('server');
  const version = /^redis_version:(.*)$/m.exec(info)?.[1]?.trim();
  console.log(
    `server-features bench: Node ${process.version}, ${process.env.ECHO_SERVER} (redis_version ` +
      `${version}), ${ROUNDS} rounds of ${fmt(N)} entries per drain (${new Date().toISOString()})`,
  );
  const fill = async (stream) => {
    for (let i = 0; i < N; i += 500) {
      const pipeline = admin.pipeline();
      for (let j = i; j < Math.min(N, i + 500); j++)
        pipeline.xadd(stream, '*', 'id', brandedId(), 'data', JSON.stringify(makePayload(j)));
      await pipeline.exec();
    }
    await admin.xgroup('CREATE', stream, 'g', '0');
  };
  const results = new Map(DRAINS.map((d) => [d.name, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const drain of rotate(DRAINS, r)) {
      const stream = `drain-${r}-${drain.variant}-${drain.serverFeatures}`;
      await fill(stream);
      const cfg = { lib: LIB, url: redis.url, stream, group: 'g', n: N, redisPid: redis.pid };
      const { variant, serverFeatures } = drain;
      const result = await skipDrain({ ...cfg, variant, serverFeatures });
      const left = await admin.xlen(stream);
      if (drain.variant === 'deleteOnAck' && left !== 0)
        throw new Error(`${drain.name}: ${left} entries left in the stream`);
      results.get(drain.name).push(result);
      await admin.del(stream);
    }
  }
  const plain = results.get('plain').map((d) => d.rate);
  console.log(
    '\ndrain (entries/s, median [min-max]) | ratio to plain (median of rounds [min-max]) | ' +
      'CPU µs per entry: node, redis-server',
  );
  for (const { name } of DRAINS) {
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
    `  server verbs / Redis 7 path: ${describe(native.map((rate, r) => rate / fallback[r]))}`,
  );
} finally {
  await redis.stop();
}
