// Retry workload (issue 11): a drain with 10 % failing entries under an exponential policy (50 ms
// initial), next to a drain with no failures under the default policy, in one process each time,
// one fresh stream per run, on a throw-away redis-server.
//
//   npm run build && node bench/retries.mjs                 (N 50000, 3 rounds)
//   BENCH_QUICK=1 node bench/retries.mjs                    (N 2000, 1 round)
//   BENCH_LIB_BASE=/path/to/other/dist/index.js ...         also drains that build (no failures)
//
// Reports throughput (entries settled per second, first start to last ack-ready success) and the
// retry-timing error: actual minus planned delay (failure of attempt 1 -> start of attempt 2),
// p50 / p99 / max. Validity: every entry handled once successfully, XPENDING 0, no dead letters.
import 'reflect-metadata';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRedis } from './lib/redis-server.mjs';
import { streamFields } from './lib/payload.mjs';
import { median, pct } from './lib/stats.mjs';

const require = createRequire(import.meta.url);
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const QUICK = process.env.BENCH_QUICK === '1';
const N = Number(process.env.BENCH_N ?? (QUICK ? 2000 : 50_000));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 1 : 3));
const LIB = resolve(process.env.BENCH_LIB ?? join(root, 'dist/index.js'));
const BASE = process.env.BENCH_LIB_BASE ? resolve(process.env.BENCH_LIB_BASE) : null;
const INITIAL_MS = 50;
const FAIL_EVERY = 10; // 10 % of entries fail their first attempt

const { Injectable, Module } = await import('@nestjs/common');
const { NestFactory } = await import('@nestjs/core');

let seq = 0;

async function prefill(admin, stream, n) {
  for (let i = 0; i < n; i += 1000) {
    const p = admin.pipeline();
    for (let j = i; j < Math.min(n, i + 1000); j++) p.xadd(stream, '*', ...streamFields(j));
    await p.exec();
  }
}

/** One drain in this process; returns throughput and retry lateness. */
async function drain(libPath, url, admin, { failing }) {
  const lib = require(libPath);
  const stream = `bench:retries:${++seq}`;
  await admin.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
  await prefill(admin, stream, N);
  const failedAt = new Map();
  const lateness = [];
  const done = new Set();
  let first = 0;
  let last = 0;
  let finish;
  const finished = new Promise((r) => (finish = r));
  class Handler {
    handle(message) {
      const now = performance.now();
      if (first === 0) first = now;
      const n = message.payload.seq;
      if (failing && n % FAIL_EVERY === 0) {
        if (message.attempts === 1) {
          failedAt.set(n, performance.now());
          throw new Error('planned failure');
        }
        lateness.push(now - failedAt.get(n) - INITIAL_MS);
      }
      done.add(n);
      last = now;
      if (done.size === N) finish();
    }
  }
  const options = failing ? { retry: { type: 'exponential', initialMs: INITIAL_MS } } : {};
  lib.StreamHandler(stream, 'g', options)(
    Handler.prototype,
    'handle',
    Object.getOwnPropertyDescriptor(Handler.prototype, 'handle'),
  );
  Injectable()(Handler);
  class AppModule {}
  Module({
    imports: [lib.EchoStreamModule.forRoot({ connection: url, consumerName: 'bench-retries' })],
    providers: [Handler],
  })(AppModule);
  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  const timeout = setTimeout(() => finish(), 120_000);
  await finished;
  clearTimeout(timeout);
  await new Promise((r) => setTimeout(r, 200)); // the last acks ride with the next read
  await app.close();
  const pending = Number((await admin.xpending(stream, 'g'))[0]);
  const dlq = await admin.xlen(`${stream}:dlq`);
  const valid = done.size === N && pending === 0 && dlq === 0;
  return {
    valid,
    why: valid ? '' : `handled ${done.size}/${N}, pending ${pending}, dead letters ${dlq}`,
    perSecond: (N / (last - first)) * 1000,
    lateness: lateness.sort((a, b) => a - b),
  };
}

const redis = await startRedis();
const rows = { base: [], none: [], fail10: [] };
try {
  for (let round = 0; round < ROUNDS; round++) {
    if (BASE) rows.base.push(await drain(BASE, redis.url, redis.admin, { failing: false }));
    rows.none.push(await drain(LIB, redis.url, redis.admin, { failing: false }));
    rows.fail10.push(await drain(LIB, redis.url, redis.admin, { failing: true }));
  }
} finally {
  await redis.stop();
}

const fmt = (x) => Math.round(x).toLocaleString('en-US');
const line = (name, runs) => {
  const bad = runs.find((r) => !r.valid);
  if (bad) return `| ${name} | INVALID: ${bad.why} | | |`;
  const tput = median(runs.map((r) => r.perSecond));
  const late = runs.flatMap((r) => r.lateness).sort((a, b) => a - b);
  const timing = late.length
    ? `${pct(late, 50).toFixed(1)} / ${pct(late, 99).toFixed(1)} / ${late[late.length - 1].toFixed(1)} ms (${late.length} retries)`
    : '-';
  return `| ${name} | ${fmt(tput)} | ${runs.length} | ${timing} |`;
};
console.log(
  `\nRetry workload: N ${N}, ${ROUNDS} round(s)${QUICK ? ' (BENCH_QUICK)' : ''}; lib ${LIB}\n`,
);
console.log('| run | entries/s (median) | rounds | retry timing error p50 / p99 / max |');
console.log('|---|---|---|---|');
if (BASE) console.log(line(`base build, default policy, no failures`, rows.base));
console.log(line('default policy, no failures', rows.none));
console.log(line(`exponential ${INITIAL_MS} ms, ${100 / FAIL_EVERY} % fail once`, rows.fail10));
if (BASE) {
  const ratio =
    median(rows.none.map((r) => r.perSecond)) / median(rows.base.map((r) => r.perSecond));
  console.log(`\nno-failure drain vs base build: ${ratio.toFixed(3)}x`);
}
if ([...rows.base, ...rows.none, ...rows.fail10].some((r) => !r.valid)) process.exitCode = 1;
