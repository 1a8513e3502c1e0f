// The knobs of `npm run bench` (bench/run.mjs), read from the environment once. Every default and
// every knob is described in bench/README.md ("Knobs"); BENCH_QUICK and BENCH_HEADLINE change the
// defaults, and each knob set explicitly still wins over them.
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GOAL_RATE } from '../report/goals.mjs';

/** bench/ */
export const BENCH_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** The repository: dist/, node_modules/, .bench/. */
export const ROOT = resolve(BENCH_DIR, '..');

/** The contenders of `BENCH_HEADLINE=1`: what the README table needs. */
const HEADLINE_ONLY = 'raw,raw-bp,node-redis,lib';
const QUICK_WORKLOADS = 'drain,latency,idle,memory,retries,many-handlers';
const ALL_WORKLOADS = `${QUICK_WORKLOADS},effectively-once,partitions,server-features,microservices`;

/** `tag=path,...` -> [{ tag, path }] (paths resolved against the working directory). */
function variants(list) {
  return (list ?? '')
    .split(',')
    .filter(Boolean)
    .map((spec) => {
      const [tag, path] = spec.split('=');
      return { tag, path: resolve(path) };
    });
}

/** Resolves the options of one run from `env` (process.env by default). */
export function readOptions(env = process.env) {
  const int = (name, dflt) =>
    env[name] !== undefined && env[name] !== '' ? Number(env[name]) : dflt;
  const quick = env.BENCH_QUICK === '1';
  // the README table's figures only (each still overridable by its own knob)
  const headline = env.BENCH_HEADLINE === '1';
  const n = int('BENCH_N', quick ? 2000 : 100_000);
  const only = env.BENCH_ONLY
    ? env.BENCH_ONLY.split(',')
    : headline
      ? HEADLINE_ONLY.split(',')
      : null;
  return {
    env,
    quick,
    full: env.BENCH_FULL === '1',
    headline,
    n,
    slowN: Math.min(n, int('BENCH_SLOW_N', quick ? 500 : 20_000)),
    rounds: int('BENCH_ROUNDS', quick ? 1 : 3),
    latencyWarmup: int('BENCH_LAT_WARMUP', quick ? 0.3 : 1),
    latencySeconds: int('BENCH_LAT_SECONDS', quick ? 1 : 5),
    rates: (env.BENCH_RATES ?? (quick || headline ? String(GOAL_RATE) : '1000,10000'))
      .split(',')
      .map(Number),
    idleSeconds: int('BENCH_IDLE_SECONDS', quick ? 1 : 10),
    memN: int('BENCH_MEM_N', quick ? 10_000 : 1_000_000),
    workloads: (
      env.BENCH_WORKLOADS ?? (headline ? 'drain,latency' : quick ? QUICK_WORKLOADS : ALL_WORKLOADS)
    ).split(','),
    /** BENCH_ONLY (or the headline set): contender names, null for all. */
    only,
    lib: resolve(env.BENCH_LIB ?? join(ROOT, 'dist/index.js')),
    libVariants: variants(env.BENCH_LIB_VARIANTS),
    rawVariants: variants(env.BENCH_RAW_VARIANTS),
    /** Whether a contender's drain children run with --cpu-prof: '1' the library's, or a list of names. */
    cpuProfiled:
      !env.BENCH_CPU_PROF || env.BENCH_CPU_PROF === '0'
        ? () => false
        : env.BENCH_CPU_PROF === '1'
          ? (c) => c.script === 'library.mjs'
          : (c) => env.BENCH_CPU_PROF.split(',').includes(c.name),
    profiles: join(ROOT, '.bench', 'profiles'), // git-ignored
    // quick (smoke) results go to the git-ignored .bench/, never over the published bench/results/latest.*
    results: env.BENCH_OUT || !quick ? join(BENCH_DIR, 'results') : join(ROOT, '.bench'),
    out: env.BENCH_OUT ?? (quick ? 'quick' : headline ? 'headline' : 'latest'),
    priority: env.BENCH_PRIORITY ? Number(env.BENCH_PRIORITY) : null,
    /** Extra node flags of every child (BENCH_NODE_ARGS, space-separated). */
    nodeArgs: env.BENCH_NODE_ARGS ? env.BENCH_NODE_ARGS.split(' ') : [],
  };
}

/** Sets the nice value of `pid` to `priority` (null: leave it); says so when it cannot. */
export function prioritize(pid, priority) {
  if (priority === null || !pid) return;
  try {
    os.setPriority(pid, priority);
  } catch (err) {
    console.error(
      `bench: cannot set priority ${priority} (${err.code ?? err.message}); running at the default`,
    );
  }
}
