// The contender table of `npm run bench`: who is measured, in which child script (this folder),
// with which config, in which workloads. The scripts beside this file are the children; this
// module is the runner's list of them (bench/README.md "Method" describes each contender).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FAIL_EVERY, RETRY_POLICY } from '../lib/retry-probe.mjs';

const here = dirname(fileURLToPath(import.meta.url));

/** The child script of contender `c`. */
export function contenderScript(c) {
  return join(here, c.script);
}

/**
 * Every built-in contender. kind: where its messages live; workloads: what it runs. `baseline`
 * names the contender its ratio is taken against besides raw (same handler work); `slow` ones
 * drain BENCH_SLOW_N; `notQuick` ones stay out of the smoke run unless BENCH_ONLY names them.
 * @param {{ full: boolean }} options BENCH_FULL adds the slow memory runs
 */
function builtIn({ full }) {
  return [
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
      workloads: ['drain', 'latency'].concat(full ? ['memory'] : []),
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
      workloads: ['drain', 'latency'].concat(full ? ['memory'] : []),
    },
  ];
}

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

/**
 * The run's contenders: `all` (the built-in ones plus the A/B variants of BENCH_RAW_VARIANTS and
 * BENCH_LIB_VARIANTS) and `chosen` (BENCH_ONLY's; raw is always kept as the baseline).
 * @param {ReturnType<import('../lib/options.mjs').readOptions>} options
 */
export function contenderTable(options) {
  const all = builtIn(options);
  // A/B of ioredis releases in one run: BENCH_RAW_VARIANTS=v5=/tmp/x/node_modules/ioredis,...
  // adds the raw loop on that ioredis as 'raw@v5' (drain); 'lib@v5' is then compared with it.
  const rawTags = new Set();
  for (const { tag, path } of options.rawVariants) {
    rawTags.add(tag);
    all.splice(1, 0, {
      name: `raw@${tag}`,
      label: `raw ioredis loop, ioredis ${packageVersion(path) ?? '?'} ('${tag}')`,
      kind: 'stream',
      script: 'raw.mjs',
      cfg: { ioredis: path },
      workloads: ['drain'],
    });
  }
  // A/B of library builds in one run: BENCH_LIB_VARIANTS=patched=/tmp/x/dist/index.js,... adds a
  // per-entry contender 'lib@patched' per build (drain, latency, memory; and, no failures under
  // the build's default policy, retries).
  for (const { tag, path } of options.libVariants) {
    const io = ioredisVersionOf(path);
    all.splice(all.findIndex((c) => c.name === 'lib') + 1, 0, {
      name: `lib@${tag}`,
      label: `echo-stream per-entry, build '${tag}'${io ? ` (ioredis ${io})` : ''}`,
      kind: 'stream',
      script: 'library.mjs',
      cfg: { variant: 'each', lib: path },
      ...(rawTags.has(tag) ? { baseline: `raw@${tag}` } : {}),
      ioredis: io,
      workloads: ['drain', 'latency', 'memory', 'retries'],
    });
  }
  const { only, quick } = options;
  const chosen = all.filter(
    (c) => (!only || c.name === 'raw' || only.includes(c.name)) && !(quick && c.notQuick && !only),
  );
  return { all, chosen };
}
