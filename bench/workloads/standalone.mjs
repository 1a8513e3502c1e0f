// The workloads that are bench scripts of their own (each can also be run alone): many-handlers
// (bench/many-handlers.mjs, on the run's server), effectively-once (bench/effectively-once.mjs)
// and partitions (bench/partitions.mjs), the last two in a child with their own throw-away
// server; their printed tables go into the report as they are.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
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
