// The latency workload: an open-loop producer in its own process (bench/producer.mjs) publishes
// at each of BENCH_RATES on a schedule with the publish time in the payload; the contender's
// handler records now - publish. The warm-up is not recorded; a contender that handles less than
// 90% of the rate is `saturated` (its figures are queueing delay).
import { join } from 'node:path';
import { ChildRun } from '../lib/child-run.mjs';
import { BENCH_DIR } from '../lib/options.mjs';
import { foreignCpuWindow } from '../lib/redis-server.mjs';
import { fmtSig, spread } from '../lib/stats.mjs';
import { contenderScript } from '../contenders/table.mjs';
import {
  childCfg,
  contendersOf,
  gates,
  leftOverOrError,
  log,
  QUEUE,
  rotated,
  STREAM,
} from './common.mjs';

/** One latency run of contender `c` at `rate`/s: a fresh consumer child and a producer child. */
export async function measureLatency(ctx, c, { rate, round }) {
  const { redis, options } = ctx;
  await redis.admin.flushall();
  const seconds = options.latencyWarmup + options.latencySeconds;
  const total = Math.round(rate * seconds);
  const window = foreignCpuWindow(redis.pid);
  const run = new ChildRun(
    contenderScript(c),
    childCfg(ctx, c, {
      mode: 'latency',
      capacity: total + 1000,
      warmupSeq: Math.round(rate * options.latencyWarmup),
    }),
    [],
    options,
  );
  let res;
  let prod = null;
  try {
    await run.waitFor('ready', 60_000);
    const producer = new ChildRun(
      join(BENCH_DIR, 'producer.mjs'),
      { url: redis.url, stream: STREAM, queue: QUEUE, target: c.kind, rate, seconds },
      [],
      options,
    );
    prod = await producer.waitFor('result', 60_000 + seconds * 2000);
    await producer.exit();
    if (prod.fatal) throw new Error(`producer: ${prod.fatal}`);
    run.send({ type: 'expect', n: prod.sent });
    res = await run.waitFor('result', 60_000 + prod.sent * 2);
  } catch (err) {
    run.kill();
    res = { fatal: err.message };
  }
  await run.exit();
  const foreignCpu = window.end((res.procCpuSeconds ?? 0) + (prod?.procCpuSeconds ?? 0));
  const left = await leftOverOrError(c, redis);
  const invalid = gates(res, prod?.sent ?? total, left);
  if (prod?.errors) invalid.push(`${prod.errors} publish errors`);
  // the consumer kept up when it finished within a blink of the producer
  const consumeRate = res.seconds > 0 ? res.handled / res.seconds : null;
  return {
    contender: c.name,
    round,
    rate,
    valid: invalid.length === 0,
    invalid,
    published: prod?.sent ?? null,
    producerRate: prod?.achievedRate ?? null,
    producerMaxBehindMs: prod?.maxBehindMs ?? null,
    consumeRate,
    saturated: consumeRate !== null && consumeRate < rate * 0.9,
    foreignCpu,
    client: res.client ?? null,
    latencyMs: res.latencyUs
      ? Object.fromEntries(
          Object.entries(res.latencyUs).map(([k, v]) => [k, k === 'count' ? v : v / 1000]),
        )
      : null,
  };
}

/** Per `<contender>@<rate>`: validity, saturated rounds, latency percentiles' spreads. */
export function summarizeLatency(results) {
  const by = {};
  for (const r of results) {
    const key = `${r.contender}@${r.rate}`;
    (by[key] ??= { contender: r.contender, rate: r.rate, runs: [] }).runs.push(r);
  }
  for (const s of Object.values(by)) {
    const bad = s.runs.filter((r) => !r.valid);
    s.valid = bad.length === 0;
    s.invalid = [...new Set(bad.flatMap((r) => r.invalid))];
    s.saturatedRounds = s.runs.filter((r) => r.saturated).length;
    s.rounds = s.runs.length;
    const lat = s.runs.map((r) => r.latencyMs).filter(Boolean);
    s.latencyMs = {};
    for (const k of ['p50', 'p99', 'p999', 'max', 'mean']) s.latencyMs[k] = spread(lat, k);
    s.consumeRate = spread(s.runs, 'consumeRate');
    s.foreignCpu = spread(s.runs, 'foreignCpu');
    s.producerRate = spread(s.runs, 'producerRate');
    delete s.runs;
  }
  return by;
}

export const latencyWorkload = {
  name: 'latency',
  /** Every round, every latency contender (order rotated), at every rate. */
  async run(ctx, report) {
    for (let round = 0; round < ctx.options.rounds; round++) {
      for (const c of rotated(contendersOf(ctx, 'latency'), round)) {
        for (const rate of ctx.options.rates) {
          const r = await measureLatency(ctx, c, { rate, round });
          report.runs.latency.push(r);
          const m = r.latencyMs;
          log(
            `  latency r${round} ${c.name.padEnd(11)} @${rate}/s ${r.valid && m ? `p50 ${fmtSig(m.p50)} p99 ${fmtSig(m.p99)} p99.9 ${fmtSig(m.p999)} max ${fmtSig(m.max)} ms${r.saturated ? ' (saturated)' : ''}` : `INVALID ${r.invalid.join('; ')}`}`,
          );
        }
      }
    }
    report.latency = summarizeLatency(report.runs.latency);
  },
};
