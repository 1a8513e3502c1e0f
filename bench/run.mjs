#!/usr/bin/env node
// npm run bench (after npm run build): the side-by-side benchmark of docs/benchmarks.md / issue 6.
//
// One throw-away redis-server for the whole run; every contender runs in a fresh child process
// per measurement, rounds rotate the order, and every figure is compared with the raw ioredis
// loop measured in the same run. A measurement that fails a validity gate (handled == N,
// XPENDING 0, zero errors, no duplicates) is INVALID, never a number.
//
// Where things are: the knobs in bench/lib/options.mjs, the contender table in
// bench/contenders/table.mjs (each contender's child script beside it), the workloads in
// bench/workloads/ (in run order in its index.mjs), the report (markdown, goals, targets,
// machine) in bench/report/.
//
// Knobs (environment; bench/README.md "Knobs" has every default):
//   BENCH_N=100000        entries per drain run (per-entry contenders)
//   BENCH_SLOW_N=20000    entries per drain run for the slow contenders (BullMQ, 1 ms handlers)
//   BENCH_ROUNDS=3        rounds (order rotated each round)
//   BENCH_LAT_SECONDS=5   measured seconds per latency run (after BENCH_LAT_WARMUP=1 s)
//   BENCH_RATES=1000,10000  open-loop producer rates
//   BENCH_IDLE_SECONDS=10 idle window
//   BENCH_MEM_N=1000000   entries of the memory run (RSS after N/10 vs after N)
//   BENCH_QUICK=1         smoke run: tiny N, 1 round, short runs (CI; < 60 s)
//   BENCH_HEADLINE=1      only what the README table needs (issue 25 goals): drain and latency at
//                         1,000/s of raw, raw-bp, node-redis and lib; results in bench/results/headline.*
//   BENCH_FULL=1          also the slow extras (memory run of BullMQ c=50 and lib-c16)
//   BENCH_ONLY=raw,lib    only these contenders (raw is always kept as the baseline)
//   BENCH_WORKLOADS=drain,latency,idle,memory,retries,many-handlers,effectively-once,partitions,server-features,microservices
//                         only these workloads (effectively-once runs bench/effectively-once.mjs
//                         in a child, partitions bench/partitions.mjs with BENCH_PART_N = BENCH_N,
//                         microservices bench/microservices.mjs with BENCH_MS_N = BENCH_N and
//                         BENCH_MS_ROUNDS = BENCH_ROUNDS; not in the QUICK set)
//   BENCH_MANY_N / BENCH_MANY_IDLE_SECONDS / BENCH_MANY_SHARED_READS: see bench/many-handlers.mjs
//   BENCH_LIB=/path/index.js   the library build to measure (default: dist/index.js)
//   BENCH_LIB_VARIANTS=tag=/path/index.js,...   A/B: a per-entry contender 'lib@tag' per build
//   BENCH_RAW_VARIANTS=tag=/path/node_modules/ioredis,...   A/B: the raw loop on another ioredis
//                         ('raw@tag'; 'lib@tag' of the same tag is then compared with it)
//   BENCH_CPU_PROF=1      --cpu-prof for the library's drain children (or a list: raw,lib);
//                         profiles in .bench/profiles/ (git-ignored), read with bench/tools/profile-summary.mjs
//   BENCH_OUT=latest      results basename in bench/results/ (quick runs write .bench/quick.*)
//   BENCH_PRIORITY=-10    nice value for redis-server and every child (negative needs root): less
//                         disturbance from other work on a shared machine
//   BENCH_NODE_ARGS='--flag ...'   extra node flags of every child
import { existsSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { contenderTable } from './contenders/table.mjs';
import { prioritize, readOptions } from './lib/options.mjs';
import { startRedis } from './lib/redis-server.mjs';
import { anyInvalid, finishReport, newReport, renderReport, writeReport } from './report/index.mjs';
import { WORKLOADS } from './workloads/index.mjs';
import { BLOCK_MS } from './workloads/common.mjs';

const options = readOptions();
const { all: allContenders, chosen: contenders } = contenderTable(options);

async function main() {
  if (contenders.some((c) => c.script === 'library.mjs') && !existsSync(options.lib)) {
    throw new Error(
      `${options.lib} not found: run 'npm run build' first (or point BENCH_LIB at a build)`,
    );
  }
  const started = Date.now();
  const loadStart = os.loadavg().map((x) => x.toFixed(2));
  const redis = await startRedis();
  prioritize(redis.pid, options.priority);
  const stop = async () => {
    await redis.stop();
    process.exit(130);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    const info = await redis.admin.info('server');
    const redisVersion = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
    const report = newReport({ redisVersion, options, contenders, blockMs: BLOCK_MS });
    console.error(
      `bench: redis-server ${redisVersion} on ${redis.url}; N=${options.n} (slow contenders ${options.slowN}), ${options.rounds} round(s)`,
    );
    const ctx = { redis, options, contenders };
    for (const workload of WORKLOADS)
      if (options.workloads.includes(workload.name)) await workload.run(ctx, report);
    finishReport(report, { started, loadStart, allContenders });
    writeReport(report, options);
    process.exitCode = anyInvalid(report) ? 1 : 0;
  } finally {
    await redis.stop();
  }
}

if (process.argv[2] === '--render') {
  renderReport(resolve(process.argv[3] ?? join(options.results, `${options.out}.json`)));
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(2);
});
