// The retry workload (issue 11, docs/delivery.md): drains by the library with its default retry
// policy and with `retry: false` (no failures), by every `lib@<tag>` build, and with 1 in 10
// entries failing its first attempt; the retry timing error of each retried entry
// (bench/README.md "Retry workload"; the failing handler is bench/lib/retry-probe.mjs).
import { fmt, fmtSig, spread } from '../lib/stats.mjs';
import { contendersOf, log, rotated } from './common.mjs';
import { measureDrain, pairedRatios, summarizeDrain } from './drain.mjs';

/** The drain figures of each contender plus its retry timing, and the no-failure ratios. */
export function summarizeRetries(results, contenders) {
  const by = summarizeDrain(results, contenders);
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
  for (const c of contenders) {
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

export const retriesWorkload = {
  name: 'retries',
  /** Every round, every retries contender (order rotated), N entries each. */
  async run(ctx, report) {
    const { options } = ctx;
    for (let round = 0; round < options.rounds; round++) {
      for (const c of rotated(contendersOf(ctx, 'retries'), round)) {
        const r = await measureDrain(ctx, c, { n: options.n, mode: 'drain', round });
        report.runs.retries.push(r);
        const late = r.retry?.lateMs;
        log(
          `  retries r${round} ${c.name.padEnd(13)} ${r.valid ? `${fmt(r.rate).padStart(9)} entries/s${late ? `  ${r.retry.failed} retries, late p50 ${fmtSig(late.p50)} p99 ${fmtSig(late.p99)} max ${fmtSig(late.max)} ms` : ''}` : `INVALID ${r.invalid.join('; ')}`}`,
        );
      }
    }
    report.retries = summarizeRetries(report.runs.retries, ctx.contenders);
  },
};
