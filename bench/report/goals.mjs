// The performance goals of issue 25 ("win the lead back on the same client", docs/benchmarks.md),
// as ratios within one run, each PASS or MISS with the measured value:
//
// - throughput: library / best-practice ioredis loop (`raw-bp`) >= 1.1;
// - CPU per entry: library / minimal ioredis loop (`raw`) <= 1.0;
// - p99 publish -> handler at 1,000/s: library / minimal ioredis loop (`raw`) <= 1.3.
//
// The minimal loop is the raw ioredis loop (read, parse, XACK; the library's own client). The
// node-redis minimal loop ("what a user would write instead") is shown beside them for reference.
// Each ratio is the ratio of the two medians over the run's rounds; with several rounds the
// per-round ratios (the two runs of one round are neighbours in time) follow as median [min-max].
import { fmtSig, pairedBy } from '../lib/stats.mjs';

/** The rate of the latency goal. */
export const GOAL_RATE = 1000;

const rate = (r) => r.rate;
const cpu = (r) => r.cpuPer100k;
const p99 = (r) => r.latencyMs?.p99;

/** The figure pairs: [label, workload, a, b, pick, summary figure, goal (op, bound) or null]. */
const ROWS = [
  ['throughput, library / best-practice loop', 'drain', 'lib', 'raw-bp', rate, 'rate', ['>=', 1.1]],
  ['CPU per entry, library / minimal loop', 'drain', 'lib', 'raw', cpu, 'cpu', ['<=', 1.0]],
  [
    `p99 publish -> handler at ${GOAL_RATE.toLocaleString('en-US')}/s, library / minimal loop`,
    'latency',
    'lib',
    'raw',
    p99,
    'p99',
    ['<=', 1.3],
  ],
  ['throughput, library / minimal loop', 'drain', 'lib', 'raw', rate, 'rate', null],
  ['throughput, best-practice loop / minimal loop', 'drain', 'raw-bp', 'raw', rate, 'rate', null],
  [
    'throughput, library / node-redis minimal loop',
    'drain',
    'lib',
    'node-redis',
    rate,
    'rate',
    null,
  ],
  [
    'CPU per entry, library / node-redis minimal loop',
    'drain',
    'lib',
    'node-redis',
    cpu,
    'cpu',
    null,
  ],
  ['CPU per entry, best-practice loop / minimal loop', 'drain', 'raw-bp', 'raw', cpu, 'cpu', null],
  [
    `p99 at ${GOAL_RATE.toLocaleString('en-US')}/s, library / node-redis minimal loop`,
    'latency',
    'lib',
    'node-redis',
    p99,
    'p99',
    null,
  ],
];

/** The summary figure of one contender (medians over rounds), or null (absent or INVALID). */
function figure(report, workload, name, what) {
  if (workload === 'drain') {
    const s = report.drain?.[name];
    if (!s?.valid) return null;
    return what === 'rate' ? s.rate.median : s.cpuPer100k.median;
  }
  const s = report.latency?.[`${name}@${GOAL_RATE}`];
  return s?.valid ? s.latencyMs.p99.median : null;
}

/** Describes one figure for the table: throughput in entries/s, CPU in µs/entry, p99 in ms. */
function show(what, x) {
  if (what === 'rate') return `${Math.round(x).toLocaleString('en-US')}/s`;
  if (what === 'cpu') return `${fmtSig(x * 10)} µs`;
  return `${fmtSig(x)} ms`;
}

/**
 * The goals and reference ratios of a finished run (rows whose contenders did not both run are
 * left out; a contender that ran but is INVALID makes its goal MISS with 'INVALID').
 */
export function goalsOf(report) {
  const out = [];
  for (const [label, workload, a, b, pick, what, goal] of ROWS) {
    const ran = (n) =>
      workload === 'drain'
        ? report.drain?.[n] !== undefined
        : report.latency?.[`${n}@${GOAL_RATE}`] !== undefined;
    if (!ran(a) || !ran(b)) continue;
    const fa = figure(report, workload, a, what);
    const fb = figure(report, workload, b, what);
    const ratio = fa !== null && fb !== null ? fa / fb : null;
    const runs = workload === 'drain' ? report.runs.drain : report.runs.latency;
    const perRound =
      ratio === null
        ? null
        : pairedBy(
            workload === 'drain' ? runs : runs.filter((r) => r.rate === GOAL_RATE),
            a,
            b,
            pick,
          );
    const met =
      goal === null || ratio === null
        ? null
        : goal[0] === '>='
          ? ratio >= goal[1]
          : ratio <= goal[1];
    out.push({
      label,
      goal: goal ? `${goal[0]} ${goal[1].toFixed(1)}x` : null,
      a,
      b,
      ratio,
      perRound,
      figures: ratio === null ? null : `${show(what, fa)} / ${show(what, fb)}`,
      status: goal === null ? null : ratio === null ? 'MISS (INVALID)' : met ? 'PASS' : 'MISS',
    });
  }
  return out;
}

/** The goals table (markdown lines), empty when no goal row applies. */
export function goalsMarkdown(goals, rounds) {
  if (!goals?.length) return [];
  const L = [
    '',
    '## Goals (issue 25, docs/benchmarks.md): ratios in this run',
    '',
    '| figure | goal | measured | per round | figures | status |',
    '|---|---|---:|---|---|---|',
  ];
  for (const g of goals) {
    const pr =
      g.perRound && rounds > 1
        ? `${fmtSig(g.perRound.median)}x [${fmtSig(g.perRound.min)}-${fmtSig(g.perRound.max)}]`
        : '-';
    L.push(
      `| ${g.label} | ${g.goal ?? '(reference)'} | ${g.ratio === null ? 'INVALID' : `${fmtSig(g.ratio)}x`} | ${pr} | ${g.figures ?? '-'} | ${g.status ?? '-'} |`,
    );
  }
  L.push('');
  L.push(
    "Minimal loop: the raw ioredis loop (XREADGROUP COUNT 100 BLOCK, JSON.parse, one awaited XACK per batch) on the library's own client. Best-practice loop: the same with the XACK of batch N sent with the read of batch N+1. Measured: ratio of the medians over the rounds; per round: median [min-max] of the ratios of the runs of one round (neighbours in time). CPU: user+sys of the consumer process over the drain window, per entry.",
  );
  return L;
}
