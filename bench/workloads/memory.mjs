// The memory workload: one drain of BENCH_MEM_N entries per memory contender, the consumer's RSS
// after N / 10 and after N entries (a leak shows as a ratio well above 1).
import { fmt, fmtSig } from '../lib/stats.mjs';
import { contendersOf, log } from './common.mjs';
import { measureDrain } from './drain.mjs';

/** measureDrain() in memory mode, plus the first and last RSS samples (INVALID without them). */
export async function measureMemory(ctx, c) {
  const r = await measureDrain(ctx, c, { n: ctx.options.memN, mode: 'memory', round: 0 });
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
  return r;
}

export const memoryWorkload = {
  name: 'memory',
  /** Each memory contender once; report.memory is the list of runs. */
  async run(ctx, report) {
    for (const c of contendersOf(ctx, 'memory')) {
      const r = await measureMemory(ctx, c);
      report.runs.memory.push(r);
      log(
        `  memory ${c.name.padEnd(11)} ${r.valid ? `RSS ${fmt(r.rssFirstMb, 1)} -> ${fmt(r.rssLastMb, 1)} MB (x${fmtSig(r.rssRatio)}), ${fmt(r.rate)} entries/s` : `INVALID ${r.invalid.join('; ')}`}`,
      );
    }
    report.memory = report.runs.memory;
  },
};
