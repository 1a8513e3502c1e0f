#!/usr/bin/env node
// The retry workload of issue 11 alone: `npm run bench`'s `retries` workload
// (bench/workloads/retries.mjs), with its results in bench/results/retries.{json,md} (quick runs:
// .bench/quick.*). Same knobs; BENCH_LIB_BASE=<other dist/index.js> is short for
// BENCH_LIB_VARIANTS=base=<that build>.
//
//   npm run build && node bench/retries.mjs
//   BENCH_QUICK=1 node bench/retries.mjs
const env = process.env;
env.BENCH_WORKLOADS ??= 'retries';
if (!env.BENCH_QUICK || env.BENCH_QUICK === '0') env.BENCH_OUT ??= 'retries';
if (env.BENCH_LIB_BASE)
  env.BENCH_LIB_VARIANTS = [env.BENCH_LIB_VARIANTS, `base=${env.BENCH_LIB_BASE}`]
    .filter(Boolean)
    .join(',');
await import('./run.mjs');
