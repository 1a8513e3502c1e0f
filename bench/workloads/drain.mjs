// The drain workload: N pre-filled entries of ~200-byte JSON, throughput from the first handled
// entry to the last, Redis commands and consumer CPU per entry (bench/README.md "Method").
// measureDrain() is also the one measurement of the retries and memory workloads.
import { mkdirSync } from 'node:fs';
import { ChildRun } from '../lib/child-run.mjs';
import { commandStats, foreignCpuWindow } from '../lib/redis-server.mjs';
import { fmt, fmtSig, pairedBy, spread } from '../lib/stats.mjs';
import { contenderScript } from '../contenders/table.mjs';
import {
  childCfg,
  commandsOf,
  contendersOf,
  gates,
  leftOverOrError,
  log,
  prefillQueue,
  prefillStream,
  rotated,
} from './common.mjs';

/**
 * One drain of `n` entries by contender `c` in a fresh child. mode 'memory' also samples the
 * child's memory every n / 10 entries.
 */
export async function measureDrain(ctx, c, { n, mode, round }) {
  const { redis, options } = ctx;
  const { admin } = redis;
  await admin.flushall();
  const t = Date.now();
  if (c.kind === 'bullmq') await prefillQueue(redis, n);
  else await prefillStream(admin, n);
  const prefillSeconds = (Date.now() - t) / 1000;
  await admin.config('RESETSTAT');
  const execArgv = [];
  if (options.cpuProfiled(c) && mode === 'drain') {
    mkdirSync(options.profiles, { recursive: true });
    execArgv.push(
      '--cpu-prof',
      `--cpu-prof-dir=${options.profiles}`,
      `--cpu-prof-name=${c.name.replace(/[^\w.-]/g, '_')}-r${round}.cpuprofile`,
    );
  }
  const window = foreignCpuWindow(redis.pid);
  const run = new ChildRun(
    contenderScript(c),
    childCfg(ctx, c, { mode, n, memEvery: mode === 'memory' ? n / 10 : 0 }),
    execArgv,
    options,
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
  const left = await leftOverOrError(c, redis);
  const invalid = gates(res, n, left);
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

/**
 * rate(a) / rate(b) of each round both ran in (neighbours in time, so less disturbed by a load
 * that comes and goes than the ratio of medians): median, min, max and the ratios themselves.
 */
export function pairedRatios(results, a, b) {
  return pairedBy(results, a, b, (r) => r.rate);
}

/** Per contender (table order): validity, rate, CPU and commands spreads, ratios to raw and baseline. */
export function summarizeDrain(results, contenders) {
  const by = {};
  for (const c of contenders) {
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
  for (const c of contenders) {
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

export const drainWorkload = {
  name: 'drain',
  /** Every round, every drain contender (order rotated); report.runs.drain and report.drain. */
  async run(ctx, report) {
    const { options } = ctx;
    for (let round = 0; round < options.rounds; round++) {
      for (const c of rotated(contendersOf(ctx, 'drain'), round)) {
        const n = c.slow ? options.slowN : options.n;
        const r = await measureDrain(ctx, c, { n, mode: 'drain', round });
        report.runs.drain.push(r);
        log(
          `  drain r${round} ${c.name.padEnd(11)} ${r.valid ? `${fmt(r.rate).padStart(9)} entries/s  ${fmtSig(r.commandsPerEntry)} cmds/entry  cpu ${fmtSig(r.cpuPer100k)} s/100k` : `INVALID ${r.invalid.join('; ')}`}`,
        );
      }
    }
    report.drain = summarizeDrain(report.runs.drain, ctx.contenders);
  },
};
