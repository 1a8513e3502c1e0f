// What heads the report: the machine, the software versions, the commit, the exact command, the
// clients each contender loaded and how busy the rest of the machine was during the run.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../lib/options.mjs';
import { median } from '../lib/stats.mjs';

/** The version of `node_modules/<pkg>`, or null. */
function installedVersion(pkg) {
  try {
    return JSON.parse(readFileSync(join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8'))
      .version;
  } catch {
    return null;
  }
}

/** The short commit, with ' (lib/ modified)' when lib/ has changes; null outside a git checkout. */
function gitCommit() {
  try {
    let git = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'lib'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    if (dirty) git += ' (lib/ modified)';
    return git;
  } catch {
    return null; // not a git checkout
  }
}

/** The machine and software of this run (report.machine). */
export function machineInfo(redisVersion, options) {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model ?? 'unknown',
    cores: cpus.length,
    nproc: os.availableParallelism(),
    memoryGb: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    redisServer: redisVersion,
    ioredis: installedVersion('ioredis'),
    bullmq: installedVersion('bullmq'),
    nest: installedVersion('@nestjs/core'),
    library: options.lib,
    git: gitCommit(),
    date: new Date().toISOString(),
    command: commandLine(options.env),
  };
}

/** The command that started this run, as it could be typed again: its knobs, then the script. */
function commandLine(env) {
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
          .map((a) => quote(a.startsWith(ROOT) ? a.slice(ROOT.length + 1) : a))
          .join(' ')}`;
  return [...knobs, script].join(' ');
}

/** The client each contender loaded, as its children reported it ('ioredis 6.0.0', ...). */
export function clientsOf(runs) {
  const out = {};
  for (const r of runs) if (r.client && !out[r.contender]) out[r.contender] = r.client;
  return out;
}

/** The share of the machine's CPU other processes used in each measured run (foreignCpu). */
export function foreignCpuOf(runs) {
  return [...runs.drain, ...runs.latency, ...runs.memory, ...(runs.retries ?? [])]
    .map((r) => r.foreignCpu)
    .filter((x) => typeof x === 'number');
}

/**
 * report.noise: how busy the rest of the machine was (median, max, runs above 10%), the load
 * average at the start and now; undefined when no run measured it.
 */
export function noiseOf(runs, loadStart) {
  const noise = foreignCpuOf(runs);
  if (!noise.length) return undefined;
  return {
    median: median(noise),
    max: Math.max(...noise),
    busyRuns: noise.filter((x) => x > 0.1).length,
    runs: noise.length,
    loadStart,
    loadEnd: os.loadavg().map((x) => x.toFixed(2)),
  };
}
