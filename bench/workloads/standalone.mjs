// The workloads that are bench scripts of their own (each can also be run alone): many-handlers
// (bench/many-handlers.mjs, on the run's server), effectively-once (bench/effectively-once.mjs),
// partitions (bench/partitions.mjs), server-features (bench/server-features.mjs, on Redis 8.6) and
// microservices (bench/microservices.mjs), the last four in a child with their own throw-away
// server; their printed tables go into the report as they are.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { serverCommand } from '../../scripts/lib/echo-server.mjs';
import { ChildRun } from '../lib/child-run.mjs';
import { BENCH_DIR } from '../lib/options.mjs';
import { runManyHandlers } from '../many-handlers.mjs';
import { log } from './common.mjs';

/** These load the library itself, whatever the contenders are. */
function needLibrary({ lib }) {
  if (!existsSync(lib)) throw new Error(`${lib} not found: run 'npm run build' first`);
}

export const manyHandlersWorkload = {
  name: 'many-handlers',
  async run(ctx, report) {
    needLibrary(ctx.options);
    report.manyHandlers = await runManyHandlers({
      redis: ctx.redis,
      ChildRun,
      lib: ctx.options.lib,
      rounds: ctx.options.rounds,
      log,
    });
  },
};

export const effectivelyOnceWorkload = {
  name: 'effectively-once',
  async run({ options }, report) {
    needLibrary(options);
    // Its own throw-away server and rounds; the script prints its tables, kept as they are.
    log('bench: effectively once (node bench/effectively-once.mjs)');
    report.effectivelyOnce = execFileSync(
      process.execPath,
      [join(BENCH_DIR, 'effectively-once.mjs')],
      { encoding: 'utf8', env: { ...options.env, BENCH_ROUNDS: String(options.rounds) } },
    );
    log(report.effectivelyOnce.trim());
  },
};

export const partitionsWorkload = {
  name: 'partitions',
  async run({ options }, report) {
    needLibrary(options);
    // Its own throw-away server and child processes; the script prints its lines, kept as they are.
    log('bench: partitioned streams (node bench/partitions.mjs)');
    report.partitions = execFileSync(process.execPath, [join(BENCH_DIR, 'partitions.mjs')], {
      encoding: 'utf8',
      env: { ...options.env, BENCH_PART_N: options.env.BENCH_PART_N ?? String(options.n) },
    });
    log(report.partitions.trim());
  },
};

export const serverFeaturesWorkload = {
  name: 'server-features',
  async run({ options }, report) {
    needLibrary(options);
    const redis86 = serverCommand('redis86');
    if (!redis86.available) {
      report.serverFeatures = `not measured: ${redis86.reason} (npm run servers fetches it)\n`;
      log(`bench: server features ${report.serverFeatures.trim()}`);
      return;
    }
    // Its own throw-away Redis 8.6 and rounds; the script prints its tables, kept as they are.
    log('bench: server features (node bench/server-features.mjs, Redis 8.6)');
    report.serverFeatures = execFileSync(
      process.execPath,
      [join(BENCH_DIR, 'server-features.mjs')],
      {
        encoding: 'utf8',
        env: {
          ...options.env,
          ECHO_SERVER: 'redis86',
          BENCH_ROUNDS: String(options.rounds),
          BENCH_N: options.env.BENCH_SF_N ?? String(Math.min(options.n, 50_000)),
        },
      },
    );
    log(report.serverFeatures.trim());
  },
};

export const microservicesWorkload = {
  name: 'microservices',
  async run({ options }, report) {
    needLibrary(options);
    // Its own throw-away server and child processes; the script prints its tables, kept as they are.
    log('bench: Nest microservices transport (node bench/microservices.mjs)');
    const env = options.env;
    report.microservices = execFileSync(process.execPath, [join(BENCH_DIR, 'microservices.mjs')], {
      encoding: 'utf8',
      env: {
        ...env,
        BENCH_MS_N: env.BENCH_MS_N ?? String(options.n),
        BENCH_MS_ROUNDS: env.BENCH_MS_ROUNDS ?? String(options.rounds),
        BENCH_MS_SECONDS: env.BENCH_MS_SECONDS ?? (options.quick ? '1' : '3'),
      },
    });
    log(report.microservices.trim());
  },
};
