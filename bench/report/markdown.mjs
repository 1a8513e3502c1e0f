// The report of `npm run bench` as markdown (bench/results/<BENCH_OUT>.md, and stdout): the head
// (machine, command, rounds, noise), one table per contender workload, the sections of the
// standalone workloads, the goals and the targets. It reads the report object only, so a
// finished run's JSON can be rendered again (`node bench/run.mjs --render`).
import { FAIL_EVERY, RETRY_POLICY } from '../lib/retry-probe.mjs';
import { fmt, fmtSig } from '../lib/stats.mjs';
import { manyHandlersMarkdown } from '../many-handlers.mjs';
import { goalsMarkdown } from './goals.mjs';

const pctCell = (x) =>
  x === null || x === undefined || Number.isNaN(x) ? '-' : `${(x * 100).toFixed(0)}%`;

/** CPU per entry in µs from a spread of s/100k: median, with [min-max] when they differ. */
function usCell(x) {
  const us = (v) => fmtSig(v * 10);
  return x.min === x.max ? us(x.median) : `${us(x.median)} [${us(x.min)}-${us(x.max)}]`;
}

/** `0.98x lib`, with the per-round ratios' median [min-max] when there were several rounds. */
function baselineCell({ ratio, baseline, perRound }) {
  if (!perRound || perRound.ratios.length < 2) return `${fmtSig(ratio)}x ${baseline}`;
  return `${fmtSig(ratio)}x ${baseline}; per round ${fmtSig(perRound.median)}x [${fmtSig(perRound.min)}-${fmtSig(perRound.max)}]`;
}

/** The contender row of `name` (its label). */
const contender = (report, name) => report.contenders.find((x) => x.name === name);

function head(report) {
  const { machine, config } = report;
  const L = [];
  L.push(
    `# nestjs-echo-stream benchmark${config.quick ? ' (QUICK smoke run: figures not meaningful)' : ''}`,
  );
  L.push('');
  L.push(
    `${machine.cpu}, ${machine.cores} cores${machine.nproc !== undefined ? ` (nproc ${machine.nproc})` : ''}, ${machine.memoryGb} GB; ${machine.os}; Node ${machine.node}; redis-server ${machine.redisServer} (loopback, no persistence); ioredis ${machine.ioredis}, BullMQ ${machine.bullmq}, Nest ${machine.nest}; ${machine.date}${machine.git ? `; commit ${machine.git}` : ''}`,
  );
  if (machine.clients && Object.keys(machine.clients).length) {
    L.push('');
    L.push(
      `Clients loaded (as each contender's process reported them): ${Object.entries(machine.clients)
        .map(([k, v]) => `${k} ${v}`)
        .join('; ')}.`,
    );
  }
  if (machine.command) {
    L.push('');
    L.push(
      `Command: \`${machine.command}\`${report.elapsedSeconds ? ` (${fmt(report.elapsedSeconds)} s)` : ''}.`,
    );
  }
  L.push('');
  L.push(
    `Rounds: ${config.rounds} (order rotated); every contender in a fresh process per run; figures are median [min-max] over rounds.${config.priority !== null ? ` Processes ran at nice ${config.priority}.` : ''}`,
  );
  if (report.noise) {
    const { median: med, max } = report.noise;
    L.push('');
    const { busyRuns, runs } = report.noise;
    L.push(
      `Other processes used ${pctCell(med)} (median) / ${pctCell(max)} (max) of the machine's CPU during the measurements (${busyRuns} of ${runs} runs above 10%); load average ${report.noise.loadStart.join(' ')} at start, ${report.noise.loadEnd.join(' ')} at end.${med > 0.05 || busyRuns > runs / 10 ? ' **The machine was not quiet: tail latencies (and, less, throughput) are disturbed; compare ratios within this run only.**' : ''}`,
    );
  }
  return L;
}

function drainTable({ drain, contenders }) {
  const L = [''];
  L.push(`## Drain: pre-filled entries of ~200-byte JSON, first handled -> last handled`);
  L.push('');
  L.push(
    '| contender | N | entries/s median | min | max | x raw | Redis cmds/entry | CPU µs/entry | CPU x raw |',
  );
  L.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const c of contenders) {
    const s = drain[c.name];
    if (!s) continue;
    if (!s.valid) {
      L.push(`| ${c.label} | ${fmt(s.n)} | INVALID: ${s.invalid.join('; ')} | | | | | | |`);
      continue;
    }
    const ratio = s.ratioToRaw == null ? '-' : `${fmtSig(s.ratioToRaw)}x`;
    const extra = s.ratioToBaseline ? ` (${baselineCell(s.ratioToBaseline)})` : '';
    const rawCpu = drain.raw?.valid ? drain.raw.cpuPer100k.median : null;
    const cpuRatio = rawCpu ? `${fmtSig(s.cpuPer100k.median / rawCpu)}x` : '-';
    L.push(
      `| ${c.label} | ${fmt(s.n)} | ${fmt(s.rate.median)} | ${fmt(s.rate.min)} | ${fmt(s.rate.max)} | ${ratio}${extra} | ${fmtSig(s.commandsPerEntry.median)} | ${usCell(s.cpuPer100k)} | ${cpuRatio} |`,
    );
  }
  L.push('');
  L.push(
    'Redis cmds/entry: INFO commandstats delta over the run / N (BullMQ: includes the commands its Lua scripts run). CPU: user+sys of the consumer process over the drain window (`process.cpuUsage()`), per entry: median [min-max] over rounds; x raw: the ratio of the medians.',
  );
  return L;
}

function retriesTable({ retries, contenders, config }) {
  const L = [''];
  L.push(
    `## Retries: drains of pre-filled entries, no failures (default retry policy, and \`retry: false\`), and ${100 / FAIL_EVERY}% failing their first attempt (\`retry: { type: '${RETRY_POLICY.type}', initialMs: ${RETRY_POLICY.initialMs} }\`)`,
  );
  L.push('');
  L.push(
    '| contender | N | entries/s median | min | max | ratio | retries | retry timing error p50 ms | p99 ms | max ms | Redis cmds/entry | CPU µs/entry |',
  );
  L.push('|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|');
  for (const c of contenders) {
    const s = retries[c.name];
    if (!s) continue;
    if (!s.valid) {
      L.push(`| ${c.label} | ${fmt(s.n)} | INVALID: ${s.invalid.join('; ')} | | | | | | | | | |`);
      continue;
    }
    const cell = (x) =>
      x
        ? `${fmtSig(x.median)}${config.rounds > 1 ? ` [${fmtSig(x.min)}-${fmtSig(x.max)}]` : ''}`
        : '-';
    const r = s.retry;
    L.push(
      `| ${c.label} | ${fmt(s.n)} | ${fmt(s.rate.median)} | ${fmt(s.rate.min)} | ${fmt(s.rate.max)} | ${s.ratioToBaseline ? baselineCell(s.ratioToBaseline) : '-'} | ${r ? fmt(r.failed.median) : '-'} | ${cell(r?.lateMs.p50)} | ${cell(r?.lateMs.p99)} | ${cell(r?.lateMs.max)} | ${fmtSig(s.commandsPerEntry.median)} | ${fmtSig(s.cpuPer100k.median * 10)} |`,
    );
  }
  L.push('');
  L.push(
    `Retry timing error: start of attempt 2 minus the failure of attempt 1 minus the planned delay (${RETRY_POLICY.initialMs} ms), per round over every retried entry; median [min-max] over rounds. Ratio: rate / rate of the named contender (per round: the same round's runs).`,
  );
  return L;
}

function latencyTable(report) {
  const { latency, config } = report;
  const L = [''];
  L.push(
    `## Latency publish -> handler, open-loop producer (separate process), ${config.latencySeconds} s measured after ${config.latencyWarmup} s warm-up`,
  );
  L.push('');
  L.push(
    '| contender | rate/s | p50 ms | p99 ms | p99 x raw | p99.9 ms | max ms | consumed/s | other CPU |',
  );
  L.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const s of Object.values(latency)) {
    const c = contender(report, s.contender);
    if (!s.valid) {
      L.push(`| ${c.label} | ${fmt(s.rate)} | INVALID: ${s.invalid.join('; ')} | | | | | | |`);
      continue;
    }
    const m = s.latencyMs;
    const raw = latency[`raw@${s.rate}`];
    const p99x =
      raw?.valid && raw.latencyMs.p99.median
        ? `${fmtSig(m.p99.median / raw.latencyMs.p99.median)}x`
        : '-';
    const cell = (k) =>
      `${fmtSig(m[k].median)}${config.rounds > 1 ? ` [${fmtSig(m[k].min)}-${fmtSig(m[k].max)}]` : ''}`;
    L.push(
      `| ${c.label} | ${fmt(s.rate)} | ${cell('p50')} | ${cell('p99')} | ${p99x} | ${cell('p999')} | ${cell('max')} | ${fmt(s.consumeRate.median)}${s.saturatedRounds ? ` (saturated${s.saturatedRounds < s.rounds ? ` in ${s.saturatedRounds} of ${s.rounds} rounds` : ''}: cannot keep up)` : ''} | ${pctCell(s.foreignCpu.median)} |`,
    );
  }
  return L;
}

function memoryTable(report) {
  const { memory, config } = report;
  const L = [''];
  L.push(`## Memory: drain of ${fmt(config.memN)} entries, consumer RSS`);
  L.push('');
  L.push(
    `| contender | RSS after ${fmt(config.memN / 10)} MB | RSS after ${fmt(config.memN)} MB | ratio | heap used after ${fmt(config.memN)} MB | entries/s |`,
  );
  L.push('|---|---:|---:|---:|---:|---:|');
  for (const m of memory) {
    const c = contender(report, m.contender);
    if (!m.valid) {
      L.push(`| ${c.label} | INVALID: ${m.invalid.join('; ')} | | | | |`);
      continue;
    }
    L.push(
      `| ${c.label} | ${fmt(m.rssFirstMb, 1)} | ${fmt(m.rssLastMb, 1)} | ${fmtSig(m.rssRatio)} | ${fmt(m.heapLastMb, 1)} | ${fmt(m.rate)} |`,
    );
  }
  return L;
}

function idleTable(report) {
  const { idle, config } = report;
  const L = [''];
  L.push(
    `## Idle: a parked loop, no traffic, ${config.idleSeconds} s window (INFO commandstats delta)`,
  );
  L.push('');
  L.push('| contender | commands/s | per 5 s (blockMs) | commands |');
  L.push('|---|---:|---:|---|');
  for (const i of idle) {
    const c = contender(report, i.contender);
    if (!i.valid) {
      L.push(`| ${c.label} | INVALID: ${i.invalid.join('; ')} | | |`);
      continue;
    }
    const detail = Object.entries(i.commands ?? {})
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    L.push(`| ${c.label} | ${fmtSig(i.perSecond)} | ${fmtSig(i.perBlockMs)} | ${detail || '-'} |`);
  }
  return L;
}

/** A standalone script's printed tables, as they are, under `title`. */
function scriptSection(title, text) {
  return ['', title, '', '```', text.trim(), '```'];
}

function targetsTable(targets) {
  const L = ['', '## Targets (docs/benchmarks.md)', '', '| target | measured | status |'];
  L.push('|---|---:|---|');
  for (const t of targets) L.push(`| ${t.target} | ${t.measured} | ${t.status} |`);
  return L;
}

/** The whole report as markdown (ends with a newline). */
export function markdown(report) {
  const { config } = report;
  const L = head(report);
  if (report.drain) L.push(...drainTable(report));
  if (report.retries) L.push(...retriesTable(report));
  if (report.latency) L.push(...latencyTable(report));
  if (report.memory) L.push(...memoryTable(report));
  if (report.idle) L.push(...idleTable(report));
  L.push(...manyHandlersMarkdown(report.manyHandlers, config.rounds));
  if (report.effectivelyOnce)
    L.push(
      ...scriptSection(
        '## Effectively once (bench/effectively-once.mjs, ratios to the plain paths of its run)',
        report.effectivelyOnce,
      ),
    );
  if (report.partitions)
    L.push(
      ...scriptSection(
        '## Partitioned streams (bench/partitions.mjs, ratios to the plain stream of its run)',
        report.partitions,
      ),
    );
  if (report.serverFeatures)
    L.push(
      ...scriptSection(
        '## Server features (bench/server-features.mjs on Redis 8.6: its verbs against the Redis 7 path)',
        report.serverFeatures,
      ),
    );
  if (report.microservices)
    L.push(
      ...scriptSection(
        '## Nest microservices transport (bench/microservices.mjs: @EventPattern against @StreamHandler, send() against Transport.REDIS)',
        report.microservices,
      ),
    );
  L.push(...goalsMarkdown(report.goals, config.rounds));
  if (report.targets.length) L.push(...targetsTable(report.targets));
  L.push('');
  return L.join('\n');
}
