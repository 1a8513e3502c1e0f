// The report of one run: its head (machine, config, contenders), what the workloads add (runs
// and summaries), the goals and targets, written as bench/results/<BENCH_OUT>.{json,md} (quick
// runs: .bench/quick.*) with the markdown on stdout.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../lib/options.mjs';
import { fmt, fmtSig } from '../lib/stats.mjs';
import { goalsOf } from './goals.mjs';
import { clientsOf, foreignCpuOf, machineInfo, noiseOf } from './machine.mjs';
import { markdown } from './markdown.mjs';
import { targetsOf } from './targets.mjs';

const log = (...args) => console.error(...args);

/** A new report: what ran where and with which knobs; the workloads fill in `runs` and their summaries. */
export function newReport({ redisVersion, options, contenders, blockMs }) {
  return {
    machine: machineInfo(redisVersion, options),
    config: {
      priority: options.priority,
      quick: options.quick,
      full: options.full,
      n: options.n,
      slowN: options.slowN,
      rounds: options.rounds,
      rates: options.rates,
      latencyWarmup: options.latencyWarmup,
      latencySeconds: options.latencySeconds,
      idleSeconds: options.idleSeconds,
      memN: options.memN,
      blockMs,
      batchSize: 100,
    },
    contenders: contenders.map(({ name, label }) => ({ name, label })),
    runs: { drain: [], latency: [], idle: [], memory: [], retries: [] },
  };
}

/** After the workloads: the noise, the clients loaded, the goals, the targets, the elapsed time. */
export function finishReport(report, { started, loadStart, allContenders }) {
  const noise = noiseOf(report.runs, loadStart);
  if (noise) report.noise = noise;
  report.machine.clients = clientsOf([...report.runs.drain, ...report.runs.latency]);
  report.goals = goalsOf(report);
  report.targets = targetsOf(report, allContenders);
  report.elapsedSeconds = (Date.now() - started) / 1000;
}

function writeAtomic(file, text) {
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
}

/** Writes `<results>/<out>.json` and `.md`, prints the markdown, logs the goals and where it wrote. */
export function writeReport(report, { results, out }) {
  const md = markdown(report);
  mkdirSync(results, { recursive: true });
  writeAtomic(join(results, `${out}.json`), JSON.stringify(report, null, 2) + '\n');
  writeAtomic(join(results, `${out}.md`), md);
  process.stdout.write(md);
  for (const g of report.goals.filter((x) => x.status))
    log(
      `bench: goal ${g.label} ${g.goal}: ${g.ratio === null ? 'INVALID' : `${fmtSig(g.ratio)}x`} ${g.status}`,
    );
  log(
    `bench: done in ${fmt(report.elapsedSeconds, 1)} s; wrote ${join(results, out).slice(ROOT.length + 1)}.json and .md`,
  );
}

/** Whether any measurement of the report failed a validity gate (the run then exits 1). */
export function anyInvalid(report) {
  return [
    ...Object.values(report.drain ?? {}),
    ...Object.values(report.retries ?? {}),
    ...Object.values(report.latency ?? {}),
    ...(report.idle ?? []),
    ...(report.memory ?? []),
    ...(report.manyHandlers ? [report.manyHandlers] : []),
  ].some((s) => !s.valid);
}

/**
 * `node bench/run.mjs --render [results.json]`: re-renders the markdown of a finished run (the
 * fields later versions of the report added are filled in from its runs) next to its JSON.
 */
export function renderReport(file) {
  const report = JSON.parse(readFileSync(file, 'utf8'));
  const noise = foreignCpuOf(report.runs);
  for (const s of Object.values(report.latency ?? {})) {
    const runs = report.runs.latency.filter(
      (r) => r.contender === s.contender && r.rate === s.rate,
    );
    Object.assign(s, {
      saturatedRounds: runs.filter((r) => r.saturated).length,
      rounds: runs.length,
    });
  }
  if (report.noise && noise.length)
    Object.assign(report.noise, {
      busyRuns: noise.filter((x) => x > 0.1).length,
      runs: noise.length,
    });
  const md = markdown(report);
  writeAtomic(file.replace(/\.json$/, '.md'), md);
  process.stdout.write(md);
}
