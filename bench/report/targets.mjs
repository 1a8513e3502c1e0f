// The targets of docs/benchmarks.md, each met / NOT MET / n/a with the measured value: throughput
// against the raw loop and BullMQ, the retry policy's cost without failures, p99 at 1,000/s,
// memory growth and idle commands. A missed target is reported, not a failure of the run.
import { fmt, fmtSig, pairedBy } from '../lib/stats.mjs';

/** XPENDING IDLE + XAUTOCLAIM per claimIntervalMs (5000 by default). */
const SWEEP_COMMANDS = 2;

const status = (ok) => (ok === null ? 'n/a' : ok ? 'met' : 'NOT MET');

function throughput(d) {
  const out = [];
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
  return out;
}

/** The default retry policy without failures against `retry: false` and other builds. */
function retryCost(report, allContenders) {
  const rt = report.retries;
  const out = [];
  // other builds on the same ioredis (a build on another ioredis measures that, not issue 11)
  const sameIoredis = (k) =>
    allContenders.find((c) => c.name === k)?.ioredis === report.machine.ioredis;
  const cmp = [
    ['lib-retry-off', 'retry: false'],
    ...Object.keys(rt)
      .filter((k) => k.startsWith('lib@') && sameIoredis(k))
      .map((k) => [k, `build '${k.slice(4)}'`]),
  ];
  for (const [other, what] of cmp) {
    if (!rt[other]) continue;
    const pr =
      rt.lib.valid && rt[other].valid
        ? pairedBy(report.runs.retries, 'lib', other, (r) => r.rate)
        : null;
    out.push({
      target: `issue 11: no-failure drain, default retry policy / ${what} >= 0.95`,
      measured: pr
        ? `${fmtSig(pr.median)}x${pr.ratios.length > 1 ? ` [${fmtSig(pr.min)}-${fmtSig(pr.max)}] over ${pr.ratios.length} rounds` : ''}`
        : 'INVALID',
      status: status(pr ? pr.median >= 0.95 : false),
    });
  }
  return out;
}

/**
 * The targets of a finished run (report.targets), for the figures it measured.
 * @param {object} report
 * @param {object[]} allContenders the contender table (the ioredis each `lib@<tag>` build loads)
 */
export function targetsOf(report, allContenders) {
  const out = [];
  if (report.drain?.lib) out.push(...throughput(report.drain));
  if (report.retries?.lib) out.push(...retryCost(report, allContenders));
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
    const limit = (1 + SWEEP_COMMANDS) / (report.config.blockMs / 1000);
    out.push({
      target: `idle <= 1 command per blockMs + sweep (${fmtSig(limit)}/s)`,
      measured: i.valid ? `${fmtSig(i.perSecond)}/s` : 'INVALID',
      status: status(i.valid ? i.perSecond <= limit + 1e-9 : false),
    });
  }
  return out;
}
