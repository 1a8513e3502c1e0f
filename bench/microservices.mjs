#!/usr/bin/env node
// node bench/microservices.mjs (after npm run build; ~2 min): the Nest microservices transport
// (docs/microservices.md) on one throw-away redis-server, each contender in a fresh child
// (bench/lib/microservices-child.mjs):
// - drain: BENCH_MS_N (100,000) pre-filled entries (~200-byte JSON, the producer's wire format)
//   drained by (a) a @StreamHandler no-op in NestFactory.createApplicationContext and (b) the same
//   no-op as an @EventPattern under EchoStreamServer, both with module defaults; from the first
//   handler call to an empty PEL, with the CPU per entry of the process and Redis commands per
//   entry. The goal (the transport's issue): (b) within 5% of (a). Beside them, (a3): the
//   @StreamHandler no-op with `@Payload()` (Nest's pipeline around it, as around (b)), and (a2): the
//   @StreamHandler no-op returning a resolved promise (Nest's handler wrapper always returns one).
// - send(): round trips per second of `await lastValueFrom(client.send('echo', x))` from C
//   concurrent callers (BENCH_MS_CONCURRENCY, 1,16) of one client process to a @MessagePattern
//   echo handler in one server process: (c) EchoStreamClient -> EchoStreamServer and (d) Nest's
//   ClientRedis -> Transport.REDIS (pub/sub); BENCH_MS_SECONDS (3) measured per C after
//   BENCH_MS_WARMUP (0.5) s; p50 / p99 of a call beside.
// BENCH_MS_ROUNDS (3) rounds, the order of the drains and of (c)/(d) rotated each round; each
// figure is median [min-max] over the rounds, each ratio the median [min-max] of the rounds'
// ratios (the runs of a round are neighbours in time). BENCH_MS_PARTS=drain,send picks the parts.
// A drain that did not handle N or left entries pending, or a send run with an error or a reply
// that is not its request's, throws: no figure from it. Figures are printed, not asserted.
// BENCH_LIB: the build (its microservices/ beside it); BENCH_NODE_ARGS: flags of every child.
import { fork } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { streamFields } from './lib/payload.mjs';
import { commandStats, startRedis, sumCalls } from './lib/redis-server.mjs';
import { median } from './lib/stats.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const LIB = resolve(process.env.BENCH_LIB ?? join(root, 'dist/index.js'));
const MS = join(dirname(LIB), 'microservices', 'index.js');
const CHILD = join(root, 'bench', 'lib', 'microservices-child.mjs');
const N = Number(process.env.BENCH_MS_N ?? 100_000);
const ROUNDS = Math.max(1, Number(process.env.BENCH_MS_ROUNDS ?? 3));
const SECONDS = Number(process.env.BENCH_MS_SECONDS ?? 3);
const WARMUP = Number(process.env.BENCH_MS_WARMUP ?? 0.5);
const CONCURRENCY = (process.env.BENCH_MS_CONCURRENCY ?? '1,16').split(',').map(Number);
const PARTS = (process.env.BENCH_MS_PARTS ?? 'drain,send').split(',');
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const fmt = (x) => Math.round(x).toLocaleString('en-US');
const spread = (xs) => `${fmt(median(xs))} [${fmt(Math.min(...xs))}-${fmt(Math.max(...xs))}]`;
const describe = (xs) =>
  `${median(xs).toFixed(3)}x [${Math.min(...xs).toFixed(3)}-${Math.max(...xs).toFixed(3)}]`;
const rotate = (list, r) => list.map((_, i) => list[(i + r) % list.length]);

const DRAINS = [
  { name: '(a) @StreamHandler', role: 'drain-handler' },
  { name: '(b) @EventPattern (EchoStreamServer)', role: 'drain-event' },
  // not a contender of the goal: the @StreamHandler no-op returning a promise, as Nest's handler
  // wrapper always does; (b) / (a2) is what the transport and Nest's wrapper cost beyond that
  { name: '(a2) @StreamHandler, async no-op', role: 'drain-handler-async' },
  // nor this: the @StreamHandler no-op with `@Payload()`, so Nest's pipeline runs around it as
  // it runs around every @EventPattern; (b) / (a3) is what the transport adds beyond Nest's wrapper
  { name: '(a3) @StreamHandler, @Payload() (Nest pipeline)', role: 'drain-handler-payload' },
];
const SENDS = [
  { key: 'echo', name: '(c) EchoStreamClient -> EchoStreamServer', transport: 'echo' },
  { key: 'redis', name: '(d) ClientRedis -> Transport.REDIS', transport: 'redis' },
  // not a contender of the issue: (c) with @MessagePattern(pattern, { concurrency: 16 }), the
  // requests of one read handled (and answered) 16 at a time instead of one after another
  {
    key: 'echo-c16',
    name: "(c16) (c), the handler's concurrency 16",
    transport: 'echo',
    extras: { concurrency: 16 },
  },
];

const server = await startRedis();
const { admin } = server;
const { hostname: host, port } = new URL(server.url);
const base = { lib: LIB, ms: MS, url: server.url, host, port: Number(port) };

/** A child of `role`; `result` resolves with its answer (rejects on a fatal one). */
function child(role, cfg) {
  const proc = fork(CHILD, [], {
    cwd: root,
    env: { ...process.env, BENCH_CHILD: JSON.stringify({ ...base, ...cfg, role }) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: NODE_ARGS,
  });
  let ready;
  const isReady = new Promise((ok) => (ready = ok));
  const result = new Promise((ok, fail) => {
    let answer = null;
    proc.on('message', (msg) => {
      if (msg?.type === 'ready') ready();
      if (msg?.type === 'result') answer = msg;
    });
    proc.on('error', fail);
    proc.on('exit', (code) => {
      if (answer?.fatal) fail(new Error(`${role} failed: ${answer.fatal}`));
      else if (code !== 0) fail(new Error(`${role} exited with ${code}`));
      else ok(answer);
    });
  });
  return { proc, isReady, result };
}

/** One drain of `role` over a stream of its own: filled, drained, deleted; its figures. */
async function drain(role, stream) {
  for (let i = 0; i < N; i += 1000) {
    const pipeline = admin.pipeline();
    for (let j = i; j < Math.min(N, i + 1000); j++) pipeline.xadd(stream, '*', ...streamFields(j));
    await pipeline.exec();
  }
  await admin.xgroup('CREATE', stream, 'g', '0');
  await admin.config('RESETSTAT');
  const got = await child(role, { stream, group: 'g', n: N }).result;
  const stats = await commandStats(admin);
  got.commands = sumCalls(stats, ['info', 'config']) / N;
  got.byCommand = stats;
  if (got.handled !== N || got.pending !== 0)
    throw new Error(`${role}: handled ${got.handled} of ${N}, ${got.pending} pending`);
  await admin.del(stream);
  return got;
}

/**
 * One send() run of `transport` ('echo' or 'redis'): a server child (the handler's `extras`), then
 * a client child.
 */
async function sends({ transport, extras = {} }, pattern) {
  const srv = child(`serve-${transport}`, { pattern, extras });
  await Promise.race([srv.isReady, srv.result]);
  try {
    const got = await child(`send-${transport}`, {
      pattern,
      seconds: SECONDS,
      warmupSeconds: WARMUP,
      concurrency: CONCURRENCY,
    }).result;
    for (const s of got.sends)
      if (s.errors > 0 || s.mismatches > 0 || s.calls === 0)
        throw new Error(
          `send-${transport} C=${s.concurrency}: ${s.calls} calls, ${s.errors} errors, ` +
            `${s.mismatches} replies not their request's`,
        );
    return got.sends;
  } finally {
    srv.proc.kill('SIGTERM');
    await srv.result.catch(() => undefined);
  }
}

try {
  const info = await admin.info('server');
  const version = /^redis_version:(.*)$/m.exec(info)?.[1]?.trim();
  console.log(
    `microservices bench: Node ${process.version}, redis_version ${version}, ${ROUNDS} rounds; ` +
      `drain of ${fmt(N)} entries, send() ${SECONDS} s per concurrency (${new Date().toISOString()})`,
  );
  const drains = new Map(DRAINS.map((d) => [d.role, []]));
  const sent = new Map(SENDS.map((s) => [s.key, []]));
  for (let r = 0; r < ROUNDS; r++) {
    if (PARTS.includes('drain'))
      for (const d of rotate(DRAINS, r))
        drains.get(d.role).push(await drain(d.role, `ms-drain-${r}-${d.role}`));
    if (PARTS.includes('send'))
      for (const s of rotate(SENDS, r))
        sent.get(s.key).push(await sends(s, `ms-echo-${r}-${s.key}`));
    await admin.flushall(); // request streams, reply streams, groups of this round
  }
  if (PARTS.includes('drain')) printDrains(drains);
  if (PARTS.includes('send')) printSends(sent);
} finally {
  await server.stop();
}

/** The drain figures and the ratio (b) / (a). */
function printDrains(drains) {
  console.log(
    '\ndrain (entries/s, median [min-max]) | CPU µs per entry | Redis commands per entry (medians)',
  );
  for (const d of DRAINS) {
    const runs = drains.get(d.role);
    console.log(
      `  ${d.name}: ${spread(runs.map((x) => x.rate))} | ` +
        `${median(runs.map((x) => x.nodeCpuUs)).toFixed(2)} | ` +
        `${median(runs.map((x) => x.commands)).toFixed(3)}`,
    );
  }
  const [a, b, a2, a3] = DRAINS.map((d) => drains.get(d.role).map((x) => x.rate));
  const ratios = b.map((rate, r) => rate / a[r]);
  console.log(
    `  (b) / (a): ${describe(ratios)} (goal >= 0.95: ${median(ratios) >= 0.95 ? 'met' : 'not met'})`,
  );
  console.log(`  (a2) / (a): ${describe(a2.map((rate, r) => rate / a[r]))}`);
  console.log(`  (b) / (a2): ${describe(b.map((rate, r) => rate / a2[r]))}`);
  console.log(`  (a3) / (a): ${describe(a3.map((rate, r) => rate / a[r]))}`);
  const beyondNest = b.map((rate, r) => rate / a3[r]);
  console.log(
    `  (b) / (a3): ${describe(beyondNest)} (the transport beyond Nest's pipeline; >= 0.95: ` +
      `${median(beyondNest) >= 0.95 ? 'met' : 'not met'})`,
  );
}

/** The send() figures per concurrency and the ratio (c) / (d). */
function printSends(sent) {
  console.log('\nsend() round trips/s, median [min-max] | p50 / p99 µs of a call (median)');
  for (const c of CONCURRENCY) {
    const at = (key) => sent.get(key).map((round) => round.find((s) => s.concurrency === c));
    for (const s of SENDS) {
      const runs = at(s.key);
      const p = (key) => fmt(median(runs.map((x) => x[key])));
      console.log(
        `  C=${c} ${s.name}: ${spread(runs.map((x) => x.rate))} | ${p('p50Us')} / ${p('p99Us')}`,
      );
    }
    const [echo, redis, echo16] = SENDS.map((s) => at(s.key).map((x) => x.rate));
    console.log(`  C=${c} (c) / (d): ${describe(echo.map((rate, r) => rate / redis[r]))}`);
    console.log(`  C=${c} (c16) / (d): ${describe(echo16.map((rate, r) => rate / redis[r]))}`);
  }
}
