// The `many-handlers` workload of `npm run bench` (issue 15, docs/scale.md): 100 handlers on 100
// streams in one group, each measurement in a fresh child (bench/contenders/many-handlers.mjs):
//
// - boot-to-ready: from the app's init() call (Redis already up, streams and groups absent) to
//   every loop reporting state 'running' in ConsumerStats.snapshot() (polled every ms);
// - connections: CLIENT LIST entries whose name starts with `echo-stream-`, by name, once every
//   loop is running and the start-up burst is over;
// - idle commands/s: INFO commandstats delta over BENCH_MANY_IDLE_SECONDS with no traffic (the
//   runner's own INFO / CONFIG RESETSTAT / CLIENT LIST left out);
// - drain: 100 streams x BENCH_MANY_N pre-filled entries drained by the 100 handlers, against ONE
//   handler draining 100 x BENCH_MANY_N entries of one stream in the same run (ratio of rates,
//   first handled -> last handled);
// - app.close() time with every loop parked (a shared read must be woken: CLIENT UNBLOCK).
//
// Validity gates as for the other workloads: handled == N, no duplicates, XPENDING 0 on every
// stream, no dead letters, no handler error, every loop 'running' until the end.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { commandStats, foreignCpuWindow, sumCalls } from './lib/redis-server.mjs';
import { streamFields } from './lib/payload.mjs';
import { fmt, fmtSig, median } from './lib/stats.mjs';

const env = process.env;
const QUICK = env.BENCH_QUICK === '1';
const int = (name, dflt) =>
  env[name] !== undefined && env[name] !== '' ? Number(env[name]) : dflt;

/** The workload's knobs (environment), resolved once. */
export const MANY = {
  handlers: int('BENCH_MANY_HANDLERS', 100),
  perStream: int('BENCH_MANY_N', QUICK ? 20 : 2000),
  idleSeconds: int('BENCH_MANY_IDLE_SECONDS', QUICK ? 2 : 30),
  settleSeconds: 1, // past the start-up burst (group create, PEL drain, first sweep)
  // '' = the module's default; 'true' / 'false' = passed as the `sharedReads` module option
  sharedReads: env.BENCH_MANY_SHARED_READS ? env.BENCH_MANY_SHARED_READS === 'true' : undefined,
};

/** docs/scale.md targets, printed next to the figures. */
export const MANY_TARGETS = { bootMs: 1000, connections: 3, idlePerSecond: 20, ratio: 0.8 };

const GROUP = 'bench';
const NAME_PREFIX = 'echo-stream-';
// the runner's own commands inside a window
const RUNNER_CALLS = ['info', 'config|resetstat', 'client|list'];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const streamName = (i) => `bench:many:${String(i).padStart(3, '0')}`;

/** `CLIENT LIST` -> { total, byName } over the connections named `echo-stream-*`. */
export async function echoStreamConnections(admin) {
  const text = await admin.client('LIST');
  const byName = {};
  let total = 0;
  for (const line of String(text).split('\n')) {
    const name = / name=(\S*)/.exec(line)?.[1] ?? '';
    if (!name.startsWith(NAME_PREFIX)) continue;
    byName[name] = (byName[name] ?? 0) + 1;
    total++;
  }
  return { total, byName };
}

function ownCommands(stats) {
  const detail = {};
  for (const [cmd, calls] of Object.entries(stats))
    if (!RUNNER_CALLS.includes(cmd)) detail[cmd] = calls;
  return { total: sumCalls(detail), detail };
}

/** Pre-fills `streams` round-robin, `perStream` entries each, payload seq unique in the run. */
async function prefill(admin, streams, perStream) {
  const total = streams.length * perStream;
  const CHUNK = 1000;
  const inFlight = [];
  for (let from = 0; from < total; from += CHUNK) {
    const p = admin.pipeline();
    for (let seq = from; seq < Math.min(total, from + CHUNK); seq++)
      p.xadd(streams[seq % streams.length], '*', ...streamFields(seq));
    inFlight.push(p.exec());
    if (inFlight.length >= 4) await inFlight.shift();
  }
  await Promise.all(inFlight);
}

/** XPENDING of every stream + dead-letter streams that exist. */
async function leftOver(admin, streams) {
  const p = admin.pipeline();
  for (const s of streams) p.xpending(s, GROUP);
  for (const s of streams) p.exists(`${s}:dlq`);
  const replies = await p.exec();
  let pending = 0;
  let deadLetters = 0;
  let missing = 0;
  replies.forEach(([err, reply], i) => {
    if (i < streams.length) {
      if (err) missing++;
      else pending += Number(reply[0]);
    } else deadLetters += Number(reply);
  });
  return { pending, deadLetters, missing };
}

function gatesOf(res, expected, left) {
  const reasons = [];
  if (res.fatal) reasons.push(`crashed: ${res.fatal.split('\n')[0]}`);
  if (expected !== null && res.handled !== expected)
    reasons.push(`handled ${res.handled} != ${expected}`);
  if (res.duplicates) reasons.push(`${res.duplicates} duplicates`);
  if (res.errors)
    reasons.push(`${res.errors} errors (loop states ${JSON.stringify(res.loopStates)})`);
  if (left?.pending) reasons.push(`${left.pending} left pending`);
  if (left?.missing) reasons.push(`${left.missing} streams without the group`);
  if (left?.deadLetters) reasons.push('dead letters written');
  return reasons;
}

function childCfg(ctx, extra) {
  const cfg = { url: ctx.redis.url, group: GROUP, lib: ctx.lib, ...extra };
  if (MANY.sharedReads !== undefined) cfg.sharedReads = MANY.sharedReads;
  return cfg;
}

/** Boot, connections, (idle window when `idle`), close: one child. */
async function boot(ctx, { idle, round }) {
  const { admin } = ctx.redis;
  await admin.flushall();
  const streams = Array.from({ length: MANY.handlers }, (_, i) => streamName(i));
  const run = new ctx.ChildRun(ctx.script, childCfg(ctx, { mode: 'boot', n: 0, streams }));
  let ready = null;
  let res;
  let connections = null;
  let cmds = null;
  try {
    ready = await run.waitFor('ready', 60_000);
    await sleep(MANY.settleSeconds * 1000);
    connections = await echoStreamConnections(admin);
    if (idle) {
      await admin.config('RESETSTAT');
      await sleep(MANY.idleSeconds * 1000);
      cmds = ownCommands(await commandStats(admin));
    }
    run.send({ type: 'stop' });
    res = await run.waitFor('result', 60_000);
  } catch (err) {
    run.kill();
    res = { fatal: err.message };
  }
  await run.exit();
  const invalid = gatesOf(res, null, null);
  if (!connections && !res.fatal) invalid.push('no CLIENT LIST');
  return {
    round,
    valid: invalid.length === 0,
    invalid,
    bootMs: ready?.bootMs ?? null,
    initMs: ready?.initMs ?? null,
    contextMs: ready?.contextMs ?? null,
    closeMs: res.closeMs ?? null,
    connections,
    idle: cmds
      ? {
          seconds: MANY.idleSeconds,
          perSecond: cmds.total / MANY.idleSeconds,
          commands: cmds.detail,
        }
      : null,
  };
}

/** One drain: `streams.length` handlers, `perStream` entries each. */
async function drain(ctx, { kind, streams, perStream, round }) {
  const { admin } = ctx.redis;
  await admin.flushall();
  const n = streams.length * perStream;
  await prefill(admin, streams, perStream);
  await admin.config('RESETSTAT');
  const window = foreignCpuWindow(ctx.redis.pid);
  const run = new ctx.ChildRun(ctx.script, childCfg(ctx, { mode: 'drain', n, streams }));
  let res;
  try {
    res = await run.waitFor('result', 60_000 + n * 2);
  } catch (err) {
    res = { fatal: err.message };
  }
  await run.exit();
  const foreignCpu = window.end(res.procCpuSeconds ?? 0);
  const cmds = ownCommands(await commandStats(admin));
  let left;
  try {
    left = await leftOver(admin, streams);
  } catch (err) {
    left = { pending: NaN, error: err.message };
  }
  const invalid = gatesOf(res, n, left);
  return {
    kind,
    round,
    n,
    streams: streams.length,
    valid: invalid.length === 0,
    invalid,
    seconds: res.seconds,
    rate: res.seconds > 0 ? n / res.seconds : null,
    cpuPer100k: res.cpuSeconds != null ? (res.cpuSeconds * 100_000) / n : null,
    commandsPerEntry: cmds.total / n,
    foreignCpu,
  };
}

/**
 * Runs the workload: `rounds` rounds of [boot (+ idle window in round 0), drain of many streams,
 * drain of one stream], the two drains' order rotated per round.
 * ctx: { redis (from startRedis), ChildRun (bench/lib/child-run.mjs), lib (dist/index.js),
 * rounds, log }.
 */
export async function runManyHandlers(ctx) {
  const here = dirname(fileURLToPath(import.meta.url));
  const c = { ...ctx, script: join(here, 'contenders', 'many-handlers.mjs') };
  const { log } = ctx;
  const manyStreams = Array.from({ length: MANY.handlers }, (_, i) => streamName(i));
  const total = MANY.handlers * MANY.perStream;
  const runs = { boot: [], drain: [] };
  for (let round = 0; round < ctx.rounds; round++) {
    const b = await boot(c, { idle: round === 0, round });
    runs.boot.push(b);
    log(
      `  many-handlers r${round} boot ${b.valid ? `${fmt(b.bootMs)} ms, ${b.connections.total} connections ${JSON.stringify(b.connections.byName)}, close ${fmt(b.closeMs)} ms${b.idle ? `, idle ${fmtSig(b.idle.perSecond)} commands/s ${JSON.stringify(b.idle.commands)}` : ''}` : `INVALID ${b.invalid.join('; ')}`}`,
    );
    const drains = [
      { kind: 'many', streams: manyStreams, perStream: MANY.perStream },
      { kind: 'one', streams: [streamName(0)], perStream: total },
    ];
    if (round % 2 === 1) drains.reverse();
    for (const d of drains) {
      const r = await drain(c, { ...d, round });
      runs.drain.push(r);
      log(
        `  many-handlers r${round} drain ${d.kind.padEnd(4)} ${r.valid ? `${fmt(r.rate).padStart(9)} entries/s  ${fmtSig(r.commandsPerEntry)} cmds/entry` : `INVALID ${r.invalid.join('; ')}`}`,
      );
    }
  }
  return summarize(runs);
}

function spread(xs) {
  const v = xs.filter((x) => typeof x === 'number' && !Number.isNaN(x));
  return v.length ? { median: median(v), min: Math.min(...v), max: Math.max(...v) } : null;
}

function summarize(runs) {
  const bad = [...runs.boot, ...runs.drain].filter((r) => !r.valid);
  const drainOf = (kind) => {
    const rs = runs.drain.filter((r) => r.kind === kind);
    return {
      n: rs[0]?.n,
      streams: rs[0]?.streams,
      valid: rs.every((r) => r.valid),
      rate: spread(rs.map((r) => r.rate)),
      commandsPerEntry: spread(rs.map((r) => r.commandsPerEntry)),
      cpuPer100k: spread(rs.map((r) => r.cpuPer100k)),
    };
  };
  const many = drainOf('many');
  const one = drainOf('one');
  const idle = runs.boot.find((b) => b.idle)?.idle ?? null;
  const connections = runs.boot.map((b) => b.connections).filter(Boolean);
  const worst = connections.reduce((a, b) => (a && a.total >= b.total ? a : b), null);
  const noise = runs.drain.map((r) => r.foreignCpu).filter((x) => typeof x === 'number');
  return {
    config: { ...MANY, sharedReads: MANY.sharedReads ?? 'default' },
    foreignCpu: noise.length ? { median: median(noise), max: Math.max(...noise) } : null,
    valid: bad.length === 0,
    invalid: [...new Set(bad.flatMap((r) => r.invalid))],
    bootMs: spread(runs.boot.map((b) => b.bootMs)),
    initMs: spread(runs.boot.map((b) => b.initMs)),
    contextMs: spread(runs.boot.map((b) => b.contextMs)),
    closeMs: spread(runs.boot.map((b) => b.closeMs)),
    connections: worst,
    idle,
    drainMany: many,
    drainOne: one,
    ratio:
      many.valid && one.valid && many.rate && one.rate ? many.rate.median / one.rate.median : null,
    runs,
  };
}

/** The markdown section of the report (lines), targets next to the figures. */
export function manyHandlersMarkdown(s, rounds) {
  if (!s) return [];
  const T = MANY_TARGETS;
  const status = (ok) => (ok === null ? 'n/a' : ok ? 'met' : 'NOT MET');
  const cell = (sp, unit = '') =>
    sp ? `${fmt(sp.median)}${unit}${rounds > 1 ? ` [${fmt(sp.min)}-${fmt(sp.max)}]` : ''}` : '-';
  const L = [''];
  const shared =
    s.config.sharedReads === 'default' ? 'module default' : `sharedReads: ${s.config.sharedReads}`;
  L.push(
    `## Many handlers: ${s.config.handlers} handlers on ${s.config.handlers} streams, one group (docs/scale.md; ${shared})`,
  );
  L.push('');
  if (!s.valid) L.push(`**INVALID: ${s.invalid.join('; ')}**`, '');
  L.push('| figure | measured | target | status |');
  L.push('|---|---:|---:|---|');
  const boot = s.bootMs?.median ?? null;
  L.push(
    `| boot-to-ready: init() -> every loop 'running' (ms) | ${cell(s.bootMs)} | < ${fmt(T.bootMs)} | ${status(boot === null ? null : boot < T.bootMs)} |`,
  );
  L.push(
    `| createApplicationContext() -> every loop 'running' (ms; + module scan) | ${cell(s.contextMs)} | | |`,
  );
  const conn = s.connections;
  const byName = conn
    ? Object.entries(conn.byName)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')
    : '';
  L.push(
    `| connections held (CLIENT LIST, \`echo-stream-*\`) | ${conn ? `${conn.total} (${byName})` : '-'} | <= ${T.connections} | ${status(conn ? conn.total <= T.connections : null)} |`,
  );
  const idle = s.idle;
  const idleDetail = idle
    ? Object.entries(idle.commands)
        .map(([k, v]) => `${k.replaceAll('|', '\\|')} ${v}`)
        .join(', ')
    : '';
  L.push(
    `| idle commands/s over ${s.config.idleSeconds} s (INFO commandstats) | ${idle ? `${fmtSig(idle.perSecond)} (${idleDetail || 'none'})` : '-'} | <= ${T.idlePerSecond} | ${status(idle ? idle.perSecond <= T.idlePerSecond : null)} |`,
  );
  const d = (x, label) =>
    `| drain, ${label} (entries/s; Redis cmds/entry) | ${x.valid ? `${cell(x.rate)}; ${fmtSig(x.commandsPerEntry?.median)}` : 'INVALID'} | | |`;
  L.push(d(s.drainMany, `${s.drainMany.streams} handlers x ${fmt(s.config.perStream)} entries`));
  L.push(d(s.drainOne, `1 handler x ${fmt(s.drainOne.n)} entries`));
  L.push(
    `| drain ratio: ${s.drainMany.streams} handlers / 1 handler, same total | ${s.ratio === null ? '-' : `${fmtSig(s.ratio)}x`} | >= ${T.ratio} | ${status(s.ratio === null ? null : s.ratio >= T.ratio)} |`,
  );
  L.push(`| app.close() with every loop parked (ms) | ${cell(s.closeMs)} | | |`);
  L.push('');
  if (s.foreignCpu) {
    const pct = (x) => `${(x * 100).toFixed(0)}%`;
    L.push(
      `Other processes used ${pct(s.foreignCpu.median)} (median) / ${pct(s.foreignCpu.max)} (max) of the machine's CPU during the drains.`,
      '',
    );
  }
  L.push(
    `Boot: Redis up, streams and groups absent (each loop creates its group, drains its own PEL and sweeps once before 'running'). Connections counted ${s.config.settleSeconds} s after ready. Idle: no traffic, the runner's INFO / CONFIG RESETSTAT / CLIENT LIST left out. Drain: first handled -> last handled, each in a fresh process.`,
  );
  return L;
}
