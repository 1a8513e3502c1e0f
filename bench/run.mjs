#!/usr/bin/env node
// npm run bench (after npm run build): the side-by-side benchmark of docs/benchmarks.md / issue 6.
//
// One throw-away redis-server for the whole run; every contender runs in a fresh child process
// per measurement, rounds rotate the order, and every figure is compared with the raw ioredis
// loop measured in the same run. A measurement that fails a validity gate (handled == N,
// XPENDING 0, zero errors, no duplicates) is INVALID, never a number.
//
// Knobs (environment):
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
//   BENCH_WORKLOADS=drain,latency,idle,memory,retries,many-handlers,effectively-once,partitions
//                         only these workloads (effectively-once runs bench/effectively-once.mjs
//                         in a child, partitions bench/partitions.mjs with BENCH_PART_N = BENCH_N)
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
import { fork, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import { commandStats, foreignCpuWindow, startRedis, sumCalls } from './lib/redis-server.mjs';
import { makePayload, streamFields } from './lib/payload.mjs';
import { FAIL_EVERY, RETRY_POLICY } from './lib/retry-probe.mjs';
import { fmt, fmtSig, median } from './lib/stats.mjs';
import { GOAL_RATE, goalsMarkdown, goalsOf } from './lib/goals.mjs';
import { manyHandlersMarkdown, runManyHandlers } from './many-handlers.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..');
const env = process.env;
const QUICK = env.BENCH_QUICK === '1';
const FULL = env.BENCH_FULL === '1';
// the README table's figures only (each still overridable by its own knob)
const HEADLINE = env.BENCH_HEADLINE === '1';
const HEADLINE_ONLY = 'raw,raw-bp,node-redis,lib';
const int = (name, dflt) =>
  env[name] !== undefined && env[name] !== '' ? Number(env[name]) : dflt;

const N = int('BENCH_N', QUICK ? 2000 : 100_000);
const SLOW_N = Math.min(N, int('BENCH_SLOW_N', QUICK ? 500 : 20_000));
const ROUNDS = int('BENCH_ROUNDS', QUICK ? 1 : 3);
const LAT_WARMUP = int('BENCH_LAT_WARMUP', QUICK ? 0.3 : 1);
const LAT_SECONDS = int('BENCH_LAT_SECONDS', QUICK ? 1 : 5);
const RATES = (env.BENCH_RATES ?? (QUICK || HEADLINE ? String(GOAL_RATE) : '1000,10000'))
  .split(',')
  .map(Number);
const IDLE_SECONDS = int('BENCH_IDLE_SECONDS', QUICK ? 1 : 10);
const MEM_N = int('BENCH_MEM_N', QUICK ? 10_000 : 1_000_000);
const WORKLOADS = (
  env.BENCH_WORKLOADS ??
  (HEADLINE
    ? 'drain,latency'
    : QUICK
      ? 'drain,latency,idle,memory,retries,many-handlers'
      : 'drain,latency,idle,memory,retries,many-handlers,effectively-once,partitions')
).split(',');
const LIB = resolve(env.BENCH_LIB ?? join(root, 'dist/index.js'));
// '1': the library contenders; or a list of contender names
const CPU_PROF =
  !env.BENCH_CPU_PROF || env.BENCH_CPU_PROF === '0'
    ? null
    : env.BENCH_CPU_PROF === '1'
      ? (c) => c.script === 'library.mjs'
      : (c) => env.BENCH_CPU_PROF.split(',').includes(c.name);
// quick (smoke) results go to the git-ignored .bench/, never over the published bench/results/latest.*
const RESULTS = env.BENCH_OUT || !QUICK ? join(here, 'results') : join(root, '.bench');
const OUT = env.BENCH_OUT ?? (QUICK ? 'quick' : HEADLINE ? 'headline' : 'latest');
const PROFILES = join(root, '.bench', 'profiles'); // git-ignored
const PRIORITY = env.BENCH_PRIORITY ? Number(env.BENCH_PRIORITY) : null;

function prioritize(pid) {
  if (PRIORITY === null || !pid) return;
  try {
    os.setPriority(pid, PRIORITY);
  } catch (err) {
    log(
      `bench: cannot set priority ${PRIORITY} (${err.code ?? err.message}); running at the default`,
    );
  }
}

const STREAM = 'bench:orders';
const GROUP = 'bench';
const QUEUE = 'bench-orders';
const BLOCK_MS = 5000; // library default blockMs; the raw loop uses the same
const SWEEP_COMMANDS = 2; // XPENDING IDLE + XAUTOCLAIM per claimIntervalMs (5000 by default)

/**
 * kind: where its messages live; workloads: what it runs. `baseline` names the contender its
 * ratio is taken against besides raw (same handler work).
 */
const ALL_CONTENDERS = [
  {
    name: 'raw',
    label: 'raw ioredis loop (COUNT 100 BLOCK, 1 XACK/batch)',
    kind: 'stream',
    script: 'raw.mjs',
    cfg: {},
    workloads: ['drain', 'latency', 'idle', 'memory'],
  },
  {
    name: 'raw-bp',
    label: 'best-practice ioredis loop (XACK of batch N sent with the read of N+1)',
    kind: 'stream',
    script: 'raw-bp.mjs',
    cfg: {},
    workloads: ['drain', 'latency'],
  },
  {
    name: 'node-redis',
    label: 'node-redis minimal loop (COUNT 100 BLOCK, 1 XACK/batch)',
    kind: 'stream',
    script: 'node-redis.mjs',
    cfg: {},
    workloads: ['drain', 'latency'],
  },
  {
    name: 'raw-resp2',
    label: 'raw ioredis loop, RESP2 (protocol: 2)',
    kind: 'stream',
    script: 'raw.mjs',
    cfg: { protocol: 2 },
    baseline: 'raw',
    workloads: ['drain'],
  },
  {
    name: 'lib',
    label: 'echo-stream, per-entry handler (defaults)',
    kind: 'stream',
    script: 'library.mjs',
    cfg: { variant: 'each' },
    workloads: ['drain', 'latency', 'idle', 'memory', 'retries'],
  },
  {
    name: 'lib-solo',
    label: 'echo-stream, per-entry handler, sharedReads: false',
    kind: 'stream',
    script: 'library.mjs',
    cfg: { variant: 'each', sharedReads: false },
    baseline: 'lib',
    notQuick: true, // the smoke run has 'lib'; this one only flips a module option
    workloads: ['drain', 'latency'],
  },
  {
    name: 'lib-resp2',
    label: 'echo-stream, per-entry handler, connections forced to RESP2 (protocol: 2)',
    kind: 'stream',
    script: 'library.mjs',
    cfg: { variant: 'each', protocol: 2 },
    baseline: 'lib',
    workloads: ['drain'],
  },
  {
    name: 'lib-retry-off',
    label: 'echo-stream, per-entry handler, retry: false (no failures)',
    kind: 'stream',
    script: 'library.mjs',
    cfg: { variant: 'each', retry: false },
    workloads: ['retries'],
  },
  {
    name: 'lib-fail10',
    label: `echo-stream, per-entry handler, ${100 / FAIL_EVERY}% fail once, retry exponential ${RETRY_POLICY.initialMs} ms`,
    kind: 'stream',
    script: 'library.mjs',
    cfg: { variant: 'each', retry: RETRY_POLICY, failEvery: FAIL_EVERY },
    baseline: 'lib-retry-off',
    workloads: ['retries'],
  },
  {
    name: 'lib-batch',
    label: 'echo-stream, batch: true',
    kind: 'stream',
    script: 'library.mjs',
    cfg: { variant: 'batch' },
    workloads: ['drain', 'latency', 'memory'],
  },
  {
    name: 'lib-nest',
    label: 'echo-stream, per-entry, 1 interceptor + ValidationPipe DTO (@Payload)',
    kind: 'stream',
    script: 'library.mjs',
    cfg: { variant: 'nest' },
    baseline: 'lib',
    workloads: ['drain'],
  },
  {
    name: 'lib-c16',
    label: 'echo-stream, concurrency 16, 1 ms async handler',
    kind: 'stream',
    script: 'library.mjs',
    cfg: { variant: 'c16' },
    slow: true,
    baseline: 'raw-c16',
    workloads: ['drain', 'latency'].concat(FULL ? ['memory'] : []),
  },
  {
    name: 'raw-c16',
    label: 'raw loop, 16 at once, 1 ms async handler',
    kind: 'stream',
    script: 'raw.mjs',
    cfg: { concurrency: 16, handler: 'sleep1' },
    slow: true,
    workloads: ['drain'],
  },
  {
    name: 'bullmq-c1',
    label: 'BullMQ Worker, concurrency 1',
    kind: 'bullmq',
    script: 'bullmq.mjs',
    cfg: { concurrency: 1 },
    slow: true,
    workloads: ['drain', 'latency', 'idle'],
  },
  {
    name: 'bullmq-c50',
    label: 'BullMQ Worker, concurrency 50',
    kind: 'bullmq',
    script: 'bullmq.mjs',
    cfg: { concurrency: 50 },
    slow: true,
    workloads: ['drain', 'latency'].concat(FULL ? ['memory'] : []),
  },
];
// A/B of ioredis releases in one run: BENCH_RAW_VARIANTS=v5=/tmp/x/node_modules/ioredis,... adds
// the raw loop on that ioredis as 'raw@v5' (drain); 'lib@v5' is then compared with it.
const rawTags = new Set();
for (const spec of (env.BENCH_RAW_VARIANTS ?? '').split(',').filter(Boolean)) {
  const [tag, path] = spec.split('=');
  rawTags.add(tag);
  ALL_CONTENDERS.splice(1, 0, {
    name: `raw@${tag}`,
    label: `raw ioredis loop, ioredis ${packageVersion(resolve(path)) ?? '?'} ('${tag}')`,
    kind: 'stream',
    script: 'raw.mjs',
    cfg: { ioredis: resolve(path) },
    workloads: ['drain'],
  });
}
// A/B of library builds in one run: BENCH_LIB_VARIANTS=patched=/tmp/x/dist/index.js,... adds a
// per-entry contender 'lib@patched' per build (drain, latency, memory; and, no failures under the
// build's default policy, retries).
for (const spec of (env.BENCH_LIB_VARIANTS ?? '').split(',').filter(Boolean)) {
  const [tag, path] = spec.split('=');
  const io = ioredisVersionOf(resolve(path));
  ALL_CONTENDERS.splice(ALL_CONTENDERS.findIndex((c) => c.name === 'lib') + 1, 0, {
    name: `lib@${tag}`,
    label: `echo-stream per-entry, build '${tag}'${io ? ` (ioredis ${io})` : ''}`,
    kind: 'stream',
    script: 'library.mjs',
    cfg: { variant: 'each', lib: resolve(path) },
    ...(rawTags.has(tag) ? { baseline: `raw@${tag}` } : {}),
    ioredis: io,
    workloads: ['drain', 'latency', 'memory', 'retries'],
  });
}
const only = env.BENCH_ONLY
  ? env.BENCH_ONLY.split(',')
  : HEADLINE
    ? HEADLINE_ONLY.split(',')
    : null;
const CONTENDERS = ALL_CONTENDERS.filter(
  (c) => (!only || c.name === 'raw' || only.includes(c.name)) && !(QUICK && c.notQuick && !only),
);

const log = (...args) => console.error(...args);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The version in `<dir>/package.json`, or null. */
function packageVersion(dir) {
  try {
    return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version;
  } catch {
    return null;
  }
}

/** The ioredis a library build at `indexJs` loads (node's resolution from its folder), or null. */
function ioredisVersionOf(indexJs) {
  try {
    const req = createRequire(indexJs);
    return packageVersion(dirname(req.resolve('ioredis/package.json')));
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------------------------
// child processes
// ---------------------------------------------------------------------------------------------

class ChildRun {
  constructor(script, cfg, execArgv = []) {
    this.inbox = [];
    this.waiters = [];
    this.stderr = '';
    this.exited = null;
    this.child = fork(script, [], {
      env: { ...env, BENCH_CHILD: JSON.stringify(cfg) },
      execArgv: [
        '--disable-warning=ExperimentalWarning',
        ...execArgv,
        ...(env.BENCH_NODE_ARGS ? env.BENCH_NODE_ARGS.split(' ') : []),
      ],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    prioritize(this.child.pid);
    this.child.stdout.on('data', () => undefined);
    this.child.stderr.on('data', (d) => (this.stderr = (this.stderr + d).slice(-4000)));
    this.child.on('message', (msg) => {
      this.inbox.push(msg);
      this.pump();
    });
    this.child.on('exit', (code, signal) => {
      this.exited = { code, signal };
      this.pump();
    });
  }

  pump() {
    for (const w of [...this.waiters]) {
      const i = this.inbox.findIndex((m) => m.type === w.type);
      if (i >= 0) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve(this.inbox.splice(i, 1)[0]);
      } else if (this.exited) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.reject(
          new Error(
            `child exited (${this.exited.code ?? this.exited.signal}) before '${w.type}': ${this.stderr.trim().split('\n').slice(-6).join(' | ')}`,
          ),
        );
      }
    }
  }

  /** Next message of `type`; rejects on exit or timeout (the child is then killed). */
  waitFor(type, timeoutMs) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.kill();
        reject(new Error(`timeout after ${timeoutMs} ms waiting for '${type}'`));
      }, timeoutMs);
      this.waiters.push({
        type,
        resolve: (m) => (clearTimeout(timer), resolve(m)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
      this.pump();
    });
  }

  send(msg) {
    if (!this.exited) this.child.send(msg);
  }

  kill() {
    if (!this.exited) this.child.kill('SIGKILL');
  }

  async exit() {
    if (this.exited) return this.exited;
    await new Promise((r) => this.child.once('exit', r));
    return this.exited;
  }
}

function contenderScript(c) {
  return join(here, 'contenders', c.script);
}

function childCfg(c, redis, extra) {
  return {
    url: redis.url,
    stream: STREAM,
    group: GROUP,
    queue: QUEUE,
    lib: LIB,
    ...c.cfg,
    ...extra,
  };
}

// ---------------------------------------------------------------------------------------------
// Redis helpers (the runner's own connection; nothing else runs while a contender is measured)
// ---------------------------------------------------------------------------------------------

async function prefillStream(admin, n) {
  const CHUNK = 1000;
  const inFlight = [];
  for (let from = 0; from < n; from += CHUNK) {
    const p = admin.pipeline();
    for (let seq = from; seq < Math.min(n, from + CHUNK); seq++)
      p.xadd(STREAM, '*', ...streamFields(seq));
    inFlight.push(p.exec());
    if (inFlight.length >= 4) await inFlight.shift();
  }
  await Promise.all(inFlight);
}

async function withQueue(redis, fn) {
  const url = new URL(redis.url);
  const queue = new Queue(QUEUE, {
    connection: { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null },
  });
  try {
    return await fn(queue);
  } finally {
    await queue.close();
  }
}

async function prefillQueue(redis, n) {
  await withQueue(redis, async (queue) => {
    const CHUNK = 1000;
    for (let from = 0; from < n; from += CHUNK) {
      const jobs = [];
      for (let seq = from; seq < Math.min(n, from + CHUNK); seq++)
        jobs.push({ name: 'm', data: makePayload(seq), opts: { removeOnComplete: true } });
      await queue.addBulk(jobs);
    }
  });
}

/** What is still unfinished after a run: the group's PEL (streams), or every job state (BullMQ). */
async function leftOver(c, redis) {
  if (c.kind === 'bullmq') {
    const counts = await withQueue(redis, (q) => q.getJobCounts());
    return { pending: Object.values(counts).reduce((a, b) => a + b, 0), detail: counts };
  }
  const summary = await redis.admin.xpending(STREAM, GROUP);
  const dlq = await redis.admin.exists(`${STREAM}:dlq`);
  return { pending: Number(summary[0]), deadLetters: dlq };
}

function gates(c, res, expected, left) {
  const reasons = [];
  if (res.fatal) reasons.push(`crashed: ${res.fatal.split('\n')[0]}`);
  if (res.handled !== expected) reasons.push(`handled ${res.handled} != ${expected}`);
  if (res.duplicates) reasons.push(`${res.duplicates} duplicates`);
  if (res.errors) reasons.push(`${res.errors} errors`);
  if (left && left.pending !== 0) reasons.push(`${left.pending} left pending`);
  if (left && left.deadLetters) reasons.push('dead letters written');
  // the retry workload: every planned failure came back exactly once, as a retry
  const r = res.retry;
  if (r && (r.failed !== r.retried || r.totalRetries !== r.failed))
    reasons.push(`${r.failed} failures, ${r.retried} second attempts, ${r.totalRetries} retries`);
  return reasons;
}

const CALLS_OF_RUNNER = ['info', 'config|resetstat']; // the runner's own commands in a window

function commandsOf(stats) {
  const detail = {};
  for (const [cmd, calls] of Object.entries(stats))
    if (!CALLS_OF_RUNNER.includes(cmd)) detail[cmd] = calls;
  return { total: sumCalls(detail), detail };
}

// ---------------------------------------------------------------------------------------------
// workloads
// ---------------------------------------------------------------------------------------------

async function drain(c, redis, { n, mode, round }) {
  const { admin } = redis;
  await admin.flushall();
  const t = Date.now();
  if (c.kind === 'bullmq') await prefillQueue(redis, n);
  else await prefillStream(admin, n);
  const prefillSeconds = (Date.now() - t) / 1000;
  await admin.config('RESETSTAT');
  const execArgv = [];
  if (CPU_PROF?.(c) && mode === 'drain') {
    mkdirSync(PROFILES, { recursive: true });
    execArgv.push(
      '--cpu-prof',
      `--cpu-prof-dir=${PROFILES}`,
      `--cpu-prof-name=${c.name.replace(/[^\w.-]/g, '_')}-r${round}.cpuprofile`,
    );
  }
  const window = foreignCpuWindow(redis.pid);
  const run = new ChildRun(
    contenderScript(c),
    childCfg(c, redis, { mode, n, memEvery: mode === 'memory' ? n / 10 : 0 }),
    execArgv,
  );
  let res;
  try {
    res = await run.waitFor('result', 60_000 + n * 2);
  } catch (err) {
    res = { fatal: err.message };
  }
  await run.exit();
  const foreignCpu = window.end(res.procCpuSeconds ?? 0);
  const cmds = commandsOf(await commandStats(admin));
  let left = null;
  try {
    left = await leftOver(c, redis);
  } catch (err) {
    left = { pending: NaN, error: err.message };
  }
  const invalid = gates(c, res, n, left);
  const out = {
    contender: c.name,
    round,
    n,
    valid: invalid.length === 0,
    invalid,
    prefillSeconds,
    seconds: res.seconds,
    rate: res.seconds > 0 ? n / res.seconds : null,
    cpuPer100k: res.cpuSeconds != null ? (res.cpuSeconds * 100_000) / n : null,
    commandsPerEntry: cmds.total / n,
    commands: cmds.detail,
    foreignCpu,
    loopStates: res.loopStates,
    client: res.client ?? null,
  };
  if (mode === 'memory') out.memory = res.mem;
  if (res.retry) out.retry = res.retry;
  return out;
}

async function latency(c, redis, { rate, round }) {
  const { admin } = redis;
  await admin.flushall();
  const seconds = LAT_WARMUP + LAT_SECONDS;
  const total = Math.round(rate * seconds);
  const window = foreignCpuWindow(redis.pid);
  const run = new ChildRun(
    contenderScript(c),
    childCfg(c, redis, {
      mode: 'latency',
      capacity: total + 1000,
      warmupSeq: Math.round(rate * LAT_WARMUP),
    }),
  );
  let res;
  let prod = null;
  try {
    await run.waitFor('ready', 60_000);
    const producer = new ChildRun(join(here, 'producer.mjs'), {
      url: redis.url,
      stream: STREAM,
      queue: QUEUE,
      target: c.kind,
      rate,
      seconds,
    });
    prod = await producer.waitFor('result', 60_000 + seconds * 2000);
    await producer.exit();
    if (prod.fatal) throw new Error(`producer: ${prod.fatal}`);
    run.send({ type: 'expect', n: prod.sent });
    res = await run.waitFor('result', 60_000 + prod.sent * 2);
  } catch (err) {
    run.kill();
    res = { fatal: err.message };
  }
  await run.exit();
  const foreignCpu = window.end((res.procCpuSeconds ?? 0) + (prod?.procCpuSeconds ?? 0));
  let left = null;
  try {
    left = await leftOver(c, redis);
  } catch (err) {
    left = { pending: NaN, error: err.message };
  }
  const invalid = gates(c, res, prod?.sent ?? total, left);
  if (prod?.errors) invalid.push(`${prod.errors} publish errors`);
  // the consumer kept up when it finished within a blink of the producer
  const consumeRate = res.seconds > 0 ? res.handled / res.seconds : null;
  return {
    contender: c.name,
    round,
    rate,
    valid: invalid.length === 0,
    invalid,
    published: prod?.sent ?? null,
    producerRate: prod?.achievedRate ?? null,
    producerMaxBehindMs: prod?.maxBehindMs ?? null,
    consumeRate,
    saturated: consumeRate !== null && consumeRate < rate * 0.9,
    foreignCpu,
    client: res.client ?? null,
    latencyMs: res.latencyUs
      ? Object.fromEntries(
          Object.entries(res.latencyUs).map(([k, v]) => [k, k === 'count' ? v : v / 1000]),
        )
      : null,
  };
}

async function idle(c, redis) {
  const { admin } = redis;
  await admin.flushall();
  const run = new ChildRun(contenderScript(c), childCfg(c, redis, { mode: 'idle', n: 0 }));
  let res;
  let cmds = null;
  try {
    await run.waitFor('ready', 60_000);
    await sleep(1000); // past the start-up burst (group create, PEL drain, first sweep)
    await admin.config('RESETSTAT');
    await sleep(IDLE_SECONDS * 1000);
    cmds = commandsOf(await commandStats(admin));
    run.send({ type: 'stop' });
    res = await run.waitFor('result', 30_000);
  } catch (err) {
    run.kill();
    res = { fatal: err.message };
  }
  await run.exit();
  const invalid = [];
  if (res.fatal) invalid.push(`crashed: ${res.fatal.split('\n')[0]}`);
  if (res.errors) invalid.push(`${res.errors} errors`);
  // the config resetstat itself is not in the window; nothing else of the runner is
  delete cmds?.detail['config|resetstat'];
  const total = cmds ? sumCalls(cmds.detail) : NaN;
  return {
    contender: c.name,
    valid: invalid.length === 0,
    invalid,
    seconds: IDLE_SECONDS,
    commands: cmds?.detail,
    perSecond: total / IDLE_SECONDS,
    perBlockMs: (total / IDLE_SECONDS) * (BLOCK_MS / 1000),
  };
}

// ---------------------------------------------------------------------------------------------
// summary and output
// ---------------------------------------------------------------------------------------------

function spread(runs, key) {
  const xs = runs.map((r) => r[key]).filter((x) => typeof x === 'number' && !Number.isNaN(x));
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
}

function summarizeDrain(results) {
  const by = {};
  for (const c of CONTENDERS) {
    const runs = results.filter((r) => r.contender === c.name);
    if (runs.length === 0) continue;
    const bad = runs.filter((r) => !r.valid);
    by[c.name] = {
      n: runs[0].n,
      rounds: runs.length,
      valid: bad.length === 0,
      invalid: [...new Set(bad.flatMap((r) => r.invalid))],
      rate: spread(runs, 'rate'),
      cpuPer100k: spread(runs, 'cpuPer100k'),
      commandsPerEntry: spread(runs, 'commandsPerEntry'),
    };
  }
  const base = by.raw?.valid ? by.raw.rate.median : null;
  for (const c of CONTENDERS) {
    const s = by[c.name];
    if (!s) continue;
    s.ratioToRaw = s.valid && base ? s.rate.median / base : null;
    if (c.baseline && by[c.baseline]?.valid && s.valid)
      s.ratioToBaseline = {
        baseline: c.baseline,
        ratio: s.rate.median / by[c.baseline].rate.median,
        perRound: pairedRatios(results, c.name, c.baseline),
      };
  }
  return by;
}

/**
 * rate(a) / rate(b) of each round both ran in (neighbours in time, so less disturbed by a load
 * that comes and goes than the ratio of medians): median, min, max and the ratios themselves.
 */
function pairedRatios(results, a, b) {
  const rounds = new Map();
  for (const r of results) {
    if (!r.valid || !r.rate) continue;
    if (r.contender === a) (rounds.get(r.round) ?? rounds.set(r.round, {}).get(r.round)).a = r.rate;
    if (r.contender === b) (rounds.get(r.round) ?? rounds.set(r.round, {}).get(r.round)).b = r.rate;
  }
  const ratios = [...rounds.values()].filter((x) => x.a && x.b).map((x) => x.a / x.b);
  if (ratios.length === 0) return null;
  return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios), ratios };
}

/** The retry workload: the drain figures of each contender plus its retry timing (docs/delivery.md). */
function summarizeRetries(results) {
  const by = summarizeDrain(results);
  for (const [name, s] of Object.entries(by)) {
    delete s.ratioToRaw; // raw does not run this workload
    const runs = results.filter((r) => r.contender === name && r.retry);
    if (runs.length === 0) continue;
    const late = runs.map((r) => r.retry.lateMs).filter(Boolean);
    s.retry = {
      plannedMs: runs[0].retry.plannedMs,
      failed: spread(
        runs.map((r) => r.retry),
        'failed',
      ),
      lateMs: Object.fromEntries(['p50', 'p99', 'max'].map((k) => [k, spread(late, k)])),
    };
  }
  // the default policy with no failures, against retry: false and against other builds
  const ref = by['lib-retry-off'];
  for (const c of CONTENDERS) {
    const s = by[c.name];
    if (!s || s.ratioToBaseline || !ref?.valid || !s.valid || c.name === 'lib-retry-off') continue;
    if (c.name !== 'lib' && !c.name.startsWith('lib@')) continue;
    s.ratioToBaseline = {
      baseline: 'lib-retry-off',
      ratio: s.rate.median / ref.rate.median,
      perRound: pairedRatios(results, c.name, 'lib-retry-off'),
    };
  }
  return by;
}

function summarizeLatency(results) {
  const by = {};
  for (const r of results) {
    const key = `${r.contender}@${r.rate}`;
    (by[key] ??= { contender: r.contender, rate: r.rate, runs: [] }).runs.push(r);
  }
  for (const s of Object.values(by)) {
    const bad = s.runs.filter((r) => !r.valid);
    s.valid = bad.length === 0;
    s.invalid = [...new Set(bad.flatMap((r) => r.invalid))];
    s.saturatedRounds = s.runs.filter((r) => r.saturated).length;
    s.rounds = s.runs.length;
    const lat = s.runs.map((r) => r.latencyMs).filter(Boolean);
    s.latencyMs = {};
    for (const k of ['p50', 'p99', 'p999', 'max', 'mean']) s.latencyMs[k] = spread(lat, k);
    s.consumeRate = spread(s.runs, 'consumeRate');
    s.foreignCpu = spread(s.runs, 'foreignCpu');
    s.producerRate = spread(s.runs, 'producerRate');
    delete s.runs;
  }
  return by;
}

function machineInfo(redisVersion) {
  const cpus = os.cpus();
  const version = (pkg) => {
    try {
      return JSON.parse(readFileSync(join(root, 'node_modules', pkg, 'package.json'), 'utf8'))
        .version;
    } catch {
      return null;
    }
  };
  let git = null;
  try {
    git = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'lib'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    if (dirty) git += ' (lib/ modified)';
  } catch {
    // not a git checkout
  }
  return {
    cpu: cpus[0]?.model ?? 'unknown',
    cores: cpus.length,
    nproc: os.availableParallelism(),
    memoryGb: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    redisServer: redisVersion,
    ioredis: version('ioredis'),
    bullmq: version('bullmq'),
    nest: version('@nestjs/core'),
    library: LIB,
    git,
    date: new Date().toISOString(),
    command: commandLine(),
  };
}

/** The command that started this run, as it could be typed again: its knobs, then the script. */
function commandLine() {
  const quote = (v) => (/^[\w.,:/@=+-]*$/.test(v) ? v : `'${v.replace(/'/g, `'\\''`)}'`);
  const knobs = Object.keys(env)
    .filter(
      (k) =>
        (k.startsWith('BENCH_') && k !== 'BENCH_CHILD') ||
        k === 'ECHO_SERVER' ||
        k === 'REDIS_SERVER_BIN',
    )
    .sort()
    .map((k) => `${k}=${quote(env[k])}`);
  const script =
    env.npm_lifecycle_event === 'bench'
      ? 'npm run bench'
      : `node ${process.argv
          .slice(1)
          .map((a) => quote(a.startsWith(root) ? a.slice(root.length + 1) : a))
          .join(' ')}`;
  return [...knobs, script].join(' ');
}

/** The client each contender loaded, as its children reported it ('ioredis 6.0.0', ...). */
function clientsOf(runs) {
  const out = {};
  for (const r of runs) if (r.client && !out[r.contender]) out[r.contender] = r.client;
  return out;
}

/** CPU per entry in µs from a spread of s/100k: median, with [min-max] when they differ. */
function usCell(x) {
  const us = (v) => fmtSig(v * 10);
  return x.min === x.max ? us(x.median) : `${us(x.median)} [${us(x.min)}-${us(x.max)}]`;
}

/** `0.98x lib`, with the per-round ratios' median [min-max] when there were several rounds. */
function baselineCell({ ratio, baseline, perRound }) {
  if (!perRound || perRound.ratios.length < 2) return `${fmtSig(ratio)}x ${baseline}`;
  return `${fmtSig(ratio)}x ${baseline}; per round ${fmtSig(perRound.median)}x [${fmtSig(perRound.min)}-${fmtSig(perRound.max)}]`;
}

function markdown(report) {
  const { machine, config, drain, latency, idle, memory, targets, retries } = report;
  const pctCell = (x) =>
    x === null || x === undefined || Number.isNaN(x) ? '-' : `${(x * 100).toFixed(0)}%`;
  const L = [];
  L.push(
    `# nestjs-echo-stream benchmark${config.quick ? ' (QUICK smoke run: figures not meaningful)' : ''}`,
  );
  L.push('');
  L.push(
    `${machine.cpu}, ${machine.cores} cores${machine.nproc !== undefined ? ` (nproc ${machine.nproc})` : ''}, ${machine.memoryGb} GB; ${machine.os}; Node ${machine.node}; redis-server ${machine.redisServer} (loopback, no persistence); ioredis ${machine.ioredis}, BullMQ ${machine.bullmq}, Nest ${machine.nest}; ${machine.date}${machine.git ? `; commit ${machine.git}` : ''}`,
  );
  if (machine.clients && Object.keys(machine.clients).length) {
    L.push('');
    L.push(
      `Clients loaded (as each contender's process reported them): ${Object.entries(machine.clients)
        .map(([k, v]) => `${k} ${v}`)
        .join('; ')}.`,
    );
  }
  if (machine.command) {
    L.push('');
    L.push(
      `Command: \`${machine.command}\`${report.elapsedSeconds ? ` (${fmt(report.elapsedSeconds)} s)` : ''}.`,
    );
  }
  L.push('');
  L.push(
    `Rounds: ${config.rounds} (order rotated); every contender in a fresh process per run; figures are median [min-max] over rounds.${config.priority !== null ? ` Processes ran at nice ${config.priority}.` : ''}`,
  );
  if (report.noise) {
    const { median: med, max } = report.noise;
    L.push('');
    const { busyRuns, runs } = report.noise;
    L.push(
      `Other processes used ${pctCell(med)} (median) / ${pctCell(max)} (max) of the machine's CPU during the measurements (${busyRuns} of ${runs} runs above 10%); load average ${report.noise.loadStart.join(' ')} at start, ${report.noise.loadEnd.join(' ')} at end.${med > 0.05 || busyRuns > runs / 10 ? ' **The machine was not quiet: tail latencies (and, less, throughput) are disturbed; compare ratios within this run only.**' : ''}`,
    );
  }
  if (drain) {
    L.push('');
    L.push(`## Drain: pre-filled entries of ~200-byte JSON, first handled -> last handled`);
    L.push('');
    L.push(
      '| contender | N | entries/s median | min | max | x raw | Redis cmds/entry | CPU µs/entry | CPU x raw |',
    );
    L.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const c of report.contenders) {
      const s = drain[c.name];
      if (!s) continue;
      if (!s.valid) {
        L.push(`| ${c.label} | ${fmt(s.n)} | INVALID: ${s.invalid.join('; ')} | | | | | | |`);
        continue;
      }
      const ratio = s.ratioToRaw == null ? '-' : `${fmtSig(s.ratioToRaw)}x`;
      const extra = s.ratioToBaseline ? ` (${baselineCell(s.ratioToBaseline)})` : '';
      const rawCpu = drain.raw?.valid ? drain.raw.cpuPer100k.median : null;
      const cpuRatio = rawCpu ? `${fmtSig(s.cpuPer100k.median / rawCpu)}x` : '-';
      L.push(
        `| ${c.label} | ${fmt(s.n)} | ${fmt(s.rate.median)} | ${fmt(s.rate.min)} | ${fmt(s.rate.max)} | ${ratio}${extra} | ${fmtSig(s.commandsPerEntry.median)} | ${usCell(s.cpuPer100k)} | ${cpuRatio} |`,
      );
    }
    L.push('');
    L.push(
      'Redis cmds/entry: INFO commandstats delta over the run / N (BullMQ: includes the commands its Lua scripts run). CPU: user+sys of the consumer process over the drain window (`process.cpuUsage()`), per entry: median [min-max] over rounds; x raw: the ratio of the medians.',
    );
  }
  if (retries) {
    L.push('');
    L.push(
      `## Retries: drains of pre-filled entries, no failures (default retry policy, and \`retry: false\`), and ${100 / FAIL_EVERY}% failing their first attempt (\`retry: { type: '${RETRY_POLICY.type}', initialMs: ${RETRY_POLICY.initialMs} }\`)`,
    );
    L.push('');
    L.push(
      '| contender | N | entries/s median | min | max | ratio | retries | retry timing error p50 ms | p99 ms | max ms | Redis cmds/entry | CPU µs/entry |',
    );
    L.push('|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|');
    for (const c of report.contenders) {
      const s = retries[c.name];
      if (!s) continue;
      if (!s.valid) {
        L.push(`| ${c.label} | ${fmt(s.n)} | INVALID: ${s.invalid.join('; ')} | | | | | | | | | |`);
        continue;
      }
      const cell = (x) =>
        x
          ? `${fmtSig(x.median)}${config.rounds > 1 ? ` [${fmtSig(x.min)}-${fmtSig(x.max)}]` : ''}`
          : '-';
      const r = s.retry;
      L.push(
        `| ${c.label} | ${fmt(s.n)} | ${fmt(s.rate.median)} | ${fmt(s.rate.min)} | ${fmt(s.rate.max)} | ${s.ratioToBaseline ? baselineCell(s.ratioToBaseline) : '-'} | ${r ? fmt(r.failed.median) : '-'} | ${cell(r?.lateMs.p50)} | ${cell(r?.lateMs.p99)} | ${cell(r?.lateMs.max)} | ${fmtSig(s.commandsPerEntry.median)} | ${fmtSig(s.cpuPer100k.median * 10)} |`,
      );
    }
    L.push('');
    L.push(
      `Retry timing error: start of attempt 2 minus the failure of attempt 1 minus the planned delay (${RETRY_POLICY.initialMs} ms), per round over every retried entry; median [min-max] over rounds. Ratio: rate / rate of the named contender (per round: the same round's runs).`,
    );
  }
  if (latency) {
    L.push('');
    L.push(
      `## Latency publish -> handler, open-loop producer (separate process), ${config.latencySeconds} s measured after ${config.latencyWarmup} s warm-up`,
    );
    L.push('');
    L.push(
      '| contender | rate/s | p50 ms | p99 ms | p99 x raw | p99.9 ms | max ms | consumed/s | other CPU |',
    );
    L.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const s of Object.values(latency)) {
      const c = report.contenders.find((x) => x.name === s.contender);
      if (!s.valid) {
        L.push(`| ${c.label} | ${fmt(s.rate)} | INVALID: ${s.invalid.join('; ')} | | | | | | |`);
        continue;
      }
      const m = s.latencyMs;
      const raw = latency[`raw@${s.rate}`];
      const p99x =
        raw?.valid && raw.latencyMs.p99.median
          ? `${fmtSig(m.p99.median / raw.latencyMs.p99.median)}x`
          : '-';
      const cell = (k) =>
        `${fmtSig(m[k].median)}${config.rounds > 1 ? ` [${fmtSig(m[k].min)}-${fmtSig(m[k].max)}]` : ''}`;
      L.push(
        `| ${c.label} | ${fmt(s.rate)} | ${cell('p50')} | ${cell('p99')} | ${p99x} | ${cell('p999')} | ${cell('max')} | ${fmt(s.consumeRate.median)}${s.saturatedRounds ? ` (saturated${s.saturatedRounds < s.rounds ? ` in ${s.saturatedRounds} of ${s.rounds} rounds` : ''}: cannot keep up)` : ''} | ${pctCell(s.foreignCpu.median)} |`,
      );
    }
  }
  if (memory) {
    L.push('');
    L.push(`## Memory: drain of ${fmt(config.memN)} entries, consumer RSS`);
    L.push('');
    L.push(
      `| contender | RSS after ${fmt(config.memN / 10)} MB | RSS after ${fmt(config.memN)} MB | ratio | heap used after ${fmt(config.memN)} MB | entries/s |`,
    );
    L.push('|---|---:|---:|---:|---:|---:|');
    for (const m of memory) {
      const c = report.contenders.find((x) => x.name === m.contender);
      if (!m.valid) {
        L.push(`| ${c.label} | INVALID: ${m.invalid.join('; ')} | | | | |`);
        continue;
      }
      L.push(
        `| ${c.label} | ${fmt(m.rssFirstMb, 1)} | ${fmt(m.rssLastMb, 1)} | ${fmtSig(m.rssRatio)} | ${fmt(m.heapLastMb, 1)} | ${fmt(m.rate)} |`,
      );
    }
  }
  if (idle) {
    L.push('');
    L.push(
      `## Idle: a parked loop, no traffic, ${config.idleSeconds} s window (INFO commandstats delta)`,
    );
    L.push('');
    L.push('| contender | commands/s | per 5 s (blockMs) | commands |');
    L.push('|---|---:|---:|---|');
    for (const i of idle) {
      const c = report.contenders.find((x) => x.name === i.contender);
      if (!i.valid) {
        L.push(`| ${c.label} | INVALID: ${i.invalid.join('; ')} | | |`);
        continue;
      }
      const detail = Object.entries(i.commands ?? {})
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');
      L.push(
        `| ${c.label} | ${fmtSig(i.perSecond)} | ${fmtSig(i.perBlockMs)} | ${detail || '-'} |`,
      );
    }
  }
  L.push(...manyHandlersMarkdown(report.manyHandlers, config.rounds));
  if (report.effectivelyOnce) {
    L.push(
      '',
      '## Effectively once (bench/effectively-once.mjs, ratios to the plain paths of its run)',
      '',
    );
    L.push('```', report.effectivelyOnce.trim(), '```');
  }
  if (report.partitions) {
    L.push(
      '',
      '## Partitioned streams (bench/partitions.mjs, ratios to the plain stream of its run)',
      '',
    );
    L.push('```', report.partitions.trim(), '```');
  }
  L.push(...goalsMarkdown(report.goals, config.rounds));
  if (targets.length) {
    L.push('');
    L.push('## Targets (docs/benchmarks.md)');
    L.push('');
    L.push('| target | measured | status |');
    L.push('|---|---:|---|');
    for (const t of targets) L.push(`| ${t.target} | ${t.measured} | ${t.status} |`);
  }
  L.push('');
  return L.join('\n');
}

function targetsOf(report) {
  const out = [];
  const status = (ok) => (ok === null ? 'n/a' : ok ? 'met' : 'NOT MET');
  const d = report.drain;
  if (d?.lib) {
    const r = d.lib.ratioToRaw;
    out.push({
      target: 'throughput lib / raw >= 0.9 (aim > 1.0)',
      measured: r == null ? 'INVALID' : `${fmtSig(r)}x`,
      status: status(r == null ? false : r >= 0.9),
    });
    const b = d['bullmq-c1'];
    const rb = d.lib.valid && b?.valid ? d.lib.rate.median / b.rate.median : null;
    if (b)
      out.push({
        target: 'throughput lib / BullMQ(c=1) >= 10',
        measured: rb == null ? 'INVALID' : `${fmtSig(rb)}x`,
        status: status(rb == null ? false : rb >= 10),
      });
  }
  const rt = report.retries;
  if (rt?.lib) {
    // other builds on the same ioredis (a build on another ioredis measures that, not issue 11)
    const sameIoredis = (k) =>
      ALL_CONTENDERS.find((c) => c.name === k)?.ioredis === report.machine.ioredis;
    const cmp = [
      ['lib-retry-off', 'retry: false'],
      ...Object.keys(rt)
        .filter((k) => k.startsWith('lib@') && sameIoredis(k))
        .map((k) => [k, `build '${k.slice(4)}'`]),
    ];
    for (const [other, what] of cmp) {
      if (!rt[other]) continue;
      const pr =
        rt.lib.valid && rt[other].valid ? pairedRatios(report.runs.retries, 'lib', other) : null;
      out.push({
        target: `issue 11: no-failure drain, default retry policy / ${what} >= 0.95`,
        measured: pr
          ? `${fmtSig(pr.median)}x${pr.ratios.length > 1 ? ` [${fmtSig(pr.min)}-${fmtSig(pr.max)}] over ${pr.ratios.length} rounds` : ''}`
          : 'INVALID',
        status: status(pr ? pr.median >= 0.95 : false),
      });
    }
  }
  const l = report.latency?.['lib@1000'];
  if (l) {
    const p99 = l.valid ? l.latencyMs.p99.median : null;
    out.push({
      target: 'publish -> handler p99 at 1,000/s < 2 ms',
      measured:
        p99 == null ? 'INVALID' : `${fmtSig(p99)} ms (p50 ${fmtSig(l.latencyMs.p50.median)} ms)`,
      status: status(p99 == null ? false : p99 < 2),
    });
  }
  const m = report.memory?.find((x) => x.contender === 'lib');
  if (m)
    out.push({
      target: `RSS(${fmt(report.config.memN)}) / RSS(${fmt(report.config.memN / 10)}) <= 1.1`,
      measured: m.valid ? fmtSig(m.rssRatio) : 'INVALID',
      status: status(m.valid ? m.rssRatio <= 1.1 : false),
    });
  const i = report.idle?.find((x) => x.contender === 'lib');
  if (i) {
    const limit = (1 + SWEEP_COMMANDS) / (BLOCK_MS / 1000);
    out.push({
      target: `idle <= 1 command per blockMs + sweep (${fmtSig(limit)}/s)`,
      measured: i.valid ? `${fmtSig(i.perSecond)}/s` : 'INVALID',
      status: status(i.valid ? i.perSecond <= limit + 1e-9 : false),
    });
  }
  return out;
}

function writeAtomic(file, text) {
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
}

// ---------------------------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------------------------

function rotated(list, round) {
  const k = round % list.length;
  return list.slice(k).concat(list.slice(0, k));
}

async function main() {
  if (CONTENDERS.some((c) => c.script === 'library.mjs') && !existsSync(LIB)) {
    throw new Error(`${LIB} not found: run 'npm run build' first (or point BENCH_LIB at a build)`);
  }
  const started = Date.now();
  const loadStart = os.loadavg().map((x) => x.toFixed(2));
  const redis = await startRedis();
  prioritize(redis.pid);
  const stop = async () => {
    await redis.stop();
    process.exit(130);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    const info = await redis.admin.info('server');
    const redisVersion = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
    const report = {
      machine: machineInfo(redisVersion),
      config: {
        priority: PRIORITY,
        quick: QUICK,
        full: FULL,
        n: N,
        slowN: SLOW_N,
        rounds: ROUNDS,
        rates: RATES,
        latencyWarmup: LAT_WARMUP,
        latencySeconds: LAT_SECONDS,
        idleSeconds: IDLE_SECONDS,
        memN: MEM_N,
        blockMs: BLOCK_MS,
        batchSize: 100,
      },
      contenders: CONTENDERS.map(({ name, label }) => ({ name, label })),
      runs: { drain: [], latency: [], idle: [], memory: [], retries: [] },
    };
    log(
      `bench: redis-server ${redisVersion} on ${redis.url}; N=${N} (slow contenders ${SLOW_N}), ${ROUNDS} round(s)`,
    );

    if (WORKLOADS.includes('drain')) {
      for (let round = 0; round < ROUNDS; round++) {
        for (const c of rotated(
          CONTENDERS.filter((x) => x.workloads.includes('drain')),
          round,
        )) {
          const r = await drain(c, redis, { n: c.slow ? SLOW_N : N, mode: 'drain', round });
          report.runs.drain.push(r);
          log(
            `  drain r${round} ${c.name.padEnd(11)} ${r.valid ? `${fmt(r.rate).padStart(9)} entries/s  ${fmtSig(r.commandsPerEntry)} cmds/entry  cpu ${fmtSig(r.cpuPer100k)} s/100k` : `INVALID ${r.invalid.join('; ')}`}`,
          );
        }
      }
      report.drain = summarizeDrain(report.runs.drain);
    }
    if (WORKLOADS.includes('retries')) {
      for (let round = 0; round < ROUNDS; round++) {
        for (const c of rotated(
          CONTENDERS.filter((x) => x.workloads.includes('retries')),
          round,
        )) {
          const r = await drain(c, redis, { n: N, mode: 'drain', round });
          report.runs.retries.push(r);
          const late = r.retry?.lateMs;
          log(
            `  retries r${round} ${c.name.padEnd(13)} ${r.valid ? `${fmt(r.rate).padStart(9)} entries/s${late ? `  ${r.retry.failed} retries, late p50 ${fmtSig(late.p50)} p99 ${fmtSig(late.p99)} max ${fmtSig(late.max)} ms` : ''}` : `INVALID ${r.invalid.join('; ')}`}`,
          );
        }
      }
      report.retries = summarizeRetries(report.runs.retries);
    }
    if (WORKLOADS.includes('latency')) {
      for (let round = 0; round < ROUNDS; round++) {
        for (const c of rotated(
          CONTENDERS.filter((x) => x.workloads.includes('latency')),
          round,
        )) {
          for (const rate of RATES) {
            const r = await latency(c, redis, { rate, round });
            report.runs.latency.push(r);
            const m = r.latencyMs;
            log(
              `  latency r${round} ${c.name.padEnd(11)} @${rate}/s ${r.valid && m ? `p50 ${fmtSig(m.p50)} p99 ${fmtSig(m.p99)} p99.9 ${fmtSig(m.p999)} max ${fmtSig(m.max)} ms${r.saturated ? ' (saturated)' : ''}` : `INVALID ${r.invalid.join('; ')}`}`,
            );
          }
        }
      }
      report.latency = summarizeLatency(report.runs.latency);
    }
    if (WORKLOADS.includes('idle')) {
      for (const c of CONTENDERS.filter((x) => x.workloads.includes('idle'))) {
        const r = await idle(c, redis);
        report.runs.idle.push(r);
        log(
          `  idle ${c.name.padEnd(11)} ${r.valid ? `${fmtSig(r.perSecond)} commands/s ${JSON.stringify(r.commands)}` : `INVALID ${r.invalid.join('; ')}`}`,
        );
      }
      report.idle = report.runs.idle;
    }
    if (WORKLOADS.includes('memory')) {
      for (const c of CONTENDERS.filter((x) => x.workloads.includes('memory'))) {
        const r = await drain(c, redis, { n: MEM_N, mode: 'memory', round: 0 });
        const first = r.memory?.[0];
        const last = r.memory?.[r.memory.length - 1];
        if (r.valid && first && last) {
          Object.assign(r, {
            rssFirstMb: first.rss / 2 ** 20,
            rssLastMb: last.rss / 2 ** 20,
            rssRatio: last.rss / first.rss,
            heapLastMb: last.heapUsed / 2 ** 20,
          });
        } else if (r.valid) {
          r.valid = false;
          r.invalid.push('no memory samples');
        }
        report.runs.memory.push(r);
        log(
          `  memory ${c.name.padEnd(11)} ${r.valid ? `RSS ${fmt(r.rssFirstMb, 1)} -> ${fmt(r.rssLastMb, 1)} MB (x${fmtSig(r.rssRatio)}), ${fmt(r.rate)} entries/s` : `INVALID ${r.invalid.join('; ')}`}`,
        );
      }
      report.memory = report.runs.memory;
    }
    if (WORKLOADS.includes('many-handlers')) {
      if (!existsSync(LIB)) throw new Error(`${LIB} not found: run 'npm run build' first`);
      report.manyHandlers = await runManyHandlers({
        redis,
        ChildRun,
        lib: LIB,
        rounds: ROUNDS,
        log,
      });
    }
    if (WORKLOADS.includes('effectively-once')) {
      if (!existsSync(LIB)) throw new Error(`${LIB} not found: run 'npm run build' first`);
      // Its own throw-away server and rounds; the script prints its tables, kept as they are.
      log('bench: effectively once (node bench/effectively-once.mjs)');
      report.effectivelyOnce = execFileSync(
        process.execPath,
        [join(here, 'effectively-once.mjs')],
        { encoding: 'utf8', env: { ...env, BENCH_ROUNDS: String(ROUNDS) } },
      );
      log(report.effectivelyOnce.trim());
    }
    if (WORKLOADS.includes('partitions')) {
      if (!existsSync(LIB)) throw new Error(`${LIB} not found: run 'npm run build' first`);
      // Its own throw-away server and child processes; the script prints its lines, kept as they are.
      log('bench: partitioned streams (node bench/partitions.mjs)');
      report.partitions = execFileSync(process.execPath, [join(here, 'partitions.mjs')], {
        encoding: 'utf8',
        env: { ...env, BENCH_PART_N: env.BENCH_PART_N ?? String(N) },
      });
      log(report.partitions.trim());
    }
    const noise = [
      ...report.runs.drain,
      ...report.runs.latency,
      ...report.runs.memory,
      ...report.runs.retries,
    ]
      .map((r) => r.foreignCpu)
      .filter((x) => typeof x === 'number');
    if (noise.length)
      report.noise = {
        median: median(noise),
        max: Math.max(...noise),
        busyRuns: noise.filter((x) => x > 0.1).length,
        runs: noise.length,
        loadStart,
        loadEnd: os.loadavg().map((x) => x.toFixed(2)),
      };
    report.machine.clients = clientsOf([...report.runs.drain, ...report.runs.latency]);
    report.goals = goalsOf(report);
    report.targets = targetsOf(report);
    report.elapsedSeconds = (Date.now() - started) / 1000;
    const md = markdown(report);
    mkdirSync(RESULTS, { recursive: true });
    writeAtomic(join(RESULTS, `${OUT}.json`), JSON.stringify(report, null, 2) + '\n');
    writeAtomic(join(RESULTS, `${OUT}.md`), md);
    process.stdout.write(md);
    for (const g of report.goals.filter((x) => x.status))
      log(
        `bench: goal ${g.label} ${g.goal}: ${g.ratio === null ? 'INVALID' : `${fmtSig(g.ratio)}x`} ${g.status}`,
      );
    log(
      `bench: done in ${fmt(report.elapsedSeconds, 1)} s; wrote ${join(RESULTS, OUT).slice(root.length + 1)}.json and .md`,
    );
    const invalid = [
      ...Object.values(report.drain ?? {}),
      ...Object.values(report.retries ?? {}),
      ...Object.values(report.latency ?? {}),
      ...(report.idle ?? []),
      ...(report.memory ?? []),
      ...(report.manyHandlers ? [report.manyHandlers] : []),
    ].some((s) => !s.valid);
    process.exitCode = invalid ? 1 : 0;
  } finally {
    await redis.stop();
  }
}

/** `node bench/run.mjs --render [results.json]`: re-renders the markdown of a finished run. */
function render(file) {
  const report = JSON.parse(readFileSync(file, 'utf8'));
  const noise = [
    ...report.runs.drain,
    ...report.runs.latency,
    ...report.runs.memory,
    ...(report.runs.retries ?? []),
  ]
    .map((r) => r.foreignCpu)
    .filter((x) => typeof x === 'number');
  for (const s of Object.values(report.latency ?? {})) {
    const runs = report.runs.latency.filter(
      (r) => r.contender === s.contender && r.rate === s.rate,
    );
    Object.assign(s, {
      saturatedRounds: runs.filter((r) => r.saturated).length,
      rounds: runs.length,
    });
  }
  if (report.noise && noise.length)
    Object.assign(report.noise, {
      busyRuns: noise.filter((x) => x > 0.1).length,
      runs: noise.length,
    });
  const md = markdown(report);
  writeAtomic(file.replace(/\.json$/, '.md'), md);
  process.stdout.write(md);
}

if (process.argv[2] === '--render') {
  render(resolve(process.argv[3] ?? join(RESULTS, `${OUT}.json`)));
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(2);
});
