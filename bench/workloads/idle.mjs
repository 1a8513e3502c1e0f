// The idle workload: a parked loop on an empty stream, INFO commandstats delta over
// BENCH_IDLE_SECONDS once the start-up burst is over (group create, PEL drain, first sweep).
import { ChildRun } from '../lib/child-run.mjs';
import { commandStats, sumCalls } from '../lib/redis-server.mjs';
import { fmtSig } from '../lib/stats.mjs';
import { contenderScript } from '../contenders/table.mjs';
import { BLOCK_MS, childCfg, commandsOf, contendersOf, log, sleep } from './common.mjs';

/** The commands contender `c` sends while parked, per second and per blockMs. */
export async function measureIdle(ctx, c) {
  const { redis, options } = ctx;
  const { admin } = redis;
  await admin.flushall();
  const run = new ChildRun(
    contenderScript(c),
    childCfg(ctx, c, { mode: 'idle', n: 0 }),
    [],
    options,
  );
  let res;
  let cmds = null;
  try {
    await run.waitFor('ready', 60_000);
    await sleep(1000); // past the start-up burst (group create, PEL drain, first sweep)
    await admin.config('RESETSTAT');
    await sleep(options.idleSeconds * 1000);
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
    seconds: options.idleSeconds,
    commands: cmds?.detail,
    perSecond: total / options.idleSeconds,
    perBlockMs: (total / options.idleSeconds) * (BLOCK_MS / 1000),
  };
}

export const idleWorkload = {
  name: 'idle',
  /** Each idle contender once; report.idle is the list of runs. */
  async run(ctx, report) {
    for (const c of contendersOf(ctx, 'idle')) {
      const r = await measureIdle(ctx, c);
      report.runs.idle.push(r);
      log(
        `  idle ${c.name.padEnd(11)} ${r.valid ? `${fmtSig(r.perSecond)} commands/s ${JSON.stringify(r.commands)}` : `INVALID ${r.invalid.join('; ')}`}`,
      );
    }
    report.idle = report.runs.idle;
  },
};
