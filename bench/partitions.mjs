#!/usr/bin/env node
// Partitioned streams (docs/partitions.md), after npm run build: one throw-away redis-server;
//   - drain: N entries of KEYS keys, pre-filled, drained by 1 process on the plain stream, by 1
//     and by 3 processes on a partitioned stream of P partitions (time from the first READY until
//     every group's lag and pending are 0; startup and the first rebalance included);
//   - keyed publish: N sequential publish() calls with { key } vs without;
//   - rebalance: a second process joins a running one (time until the partitions are split), then
//     the first stops gracefully (time until the second owns them all);
//   - idle: one process with 4 handlers x 1 partition + 1 plain handler, then 4 x 16 + 1 plain, all
//     in one group, parked with nothing published: its connections (CLIENT LIST `echo-stream-*`)
//     and the commands per second Redis ran (INFO commandstats over BENCH_PART_IDLE_S seconds).
// Drains run at concurrency 1 and 8 (BENCH_PART_CONCURRENCY=1,8), BENCH_PART_ROUNDS (1) rounds of
// them, the order of plain and partitioned alternating between rounds; with more than one round
// each figure is the median of its rounds, and the ratio the median of each round's ratio to that
// round's plain drain (paired: a busy moment of a shared machine hits both), with its [min-max].
// Knobs: BENCH_LIB=<dist/index.js> (the build measured; default this tree's), BENCH_PART_N=20000,
// BENCH_PART_P=8, BENCH_PART_KEYS=100, BENCH_PART_IDLE_S=20,
// BENCH_PART_WORKLOADS=drain,publish,rebalance,idle, BENCH_PART_VERBOSE=1 (each round's drain on
// stderr, as it ends); BENCH_NODE_ARGS='--cpu-prof ...': extra node
// flags of every child (profiles of a drain: --cpu-prof --cpu-prof-dir=DIR). Each drain also says
// how many XACKs Redis ran for it (INFO commandstats), and the write system calls and the CPU time
// its consumer processes used from the first READY to the end (Linux). Figures are printed, not asserted.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startRedis } from './lib/redis-server.mjs';
import { median } from './lib/stats.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// the library build measured (BENCH_LIB, as for bench/run.mjs): the children load it too
const LIB = resolve(process.env.BENCH_LIB ?? join(root, 'dist', 'index.js'));
const lib = createRequire(import.meta.url)(LIB);
const N = Number(process.env.BENCH_PART_N ?? 20_000);
const P = Number(process.env.BENCH_PART_P ?? 8);
const KEYS = Number(process.env.BENCH_PART_KEYS ?? 100);
const IDLE_S = Number(process.env.BENCH_PART_IDLE_S ?? 20);
const CONCURRENCIES = (process.env.BENCH_PART_CONCURRENCY ?? '1,8').split(',').map(Number);
const ROUNDS = Math.max(1, Number(process.env.BENCH_PART_ROUNDS ?? 1));
const WORKLOADS = (process.env.BENCH_PART_WORKLOADS ?? 'drain,publish,rebalance,idle').split(',');
const CLOCK_TICKS = 100; // USER_HZ of /proc/<pid>/stat on Linux
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const VERBOSE = process.env.BENCH_PART_VERBOSE === '1';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const server = await startRedis();
const redis = new Redis(server.url);
const children = new Set();

function child(stream, name, partitions, env = {}) {
  const proc = spawn(
    process.execPath,
    [...NODE_ARGS, join(root, 'bench', 'lib', 'partition-child.mjs')],
    {
      cwd: root,
      env: {
        ...process.env,
        REDIS_URL: server.url,
        BENCH_LIB: LIB,
        STREAM: stream,
        NAME: name,
        PARTITIONS: partitions ? String(partitions) : '',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  children.add(proc);
  proc.on('exit', () => children.delete(proc));
  const ready = new Promise((ok) =>
    proc.stdout.on('data', (d) => String(d).includes('READY') && ok(Date.now())),
  );
  const exited = new Promise((ok) => proc.on('exit', ok));
  return { proc, ready, exited };
}

async function fill(stream, partitioned) {
  for (let i = 0; i < N; i += 1000) {
    const pipe = redis.pipeline();
    for (let j = i; j < Math.min(N, i + 1000); j++) {
      const key = `k${j % KEYS}`;
      const target = partitioned ? lib.partitionStreamOf(stream, lib.partitionOf(key, P)) : stream;
      pipe.xadd(
        target,
        '*',
        'id',
        `e${j}`,
        'data',
        '{"n":1}',
        ...(partitioned ? ['pkey', key] : []),
      );
    }
    await pipe.exec();
  }
}

async function drained(streams) {
  for (;;) {
    let left = 0;
    for (const s of streams) {
      const groups = await redis.xinfo('GROUPS', s).catch(() => []);
      const g = groups
        .map((flat) =>
          Object.fromEntries(flat.flatMap((v, i) => (i % 2 ? [] : [[v, flat[i + 1]]]))),
        )
        .find((x) => x.name === 'g');
      left += g ? Number(g.lag ?? 0) + Number(g.pending) : 1;
    }
    if (left === 0) return Date.now();
    await sleep(20);
  }
}

async function drain(label, processes, partitioned, concurrency) {
  const stream = `bench-${label}-c${concurrency}`;
  if (partitioned) await redis.set(`{${stream}}:echo-partitions`, String(P));
  await fill(stream, partitioned);
  const streams = partitioned ? Array.from({ length: P }, (_, i) => `${stream}:p:${i}`) : [stream];
  await redis.config('RESETSTAT');
  const kids = Array.from({ length: processes }, (_, i) =>
    child(stream, `c${i}`, partitioned ? P : null, { CONCURRENCY: String(concurrency) }),
  );
  const first = await Promise.race(kids.map((k) => k.ready));
  const atReady = kids.map((k) => usage(k.proc.pid));
  const end = await drained(streams);
  const xacks = (await commandCalls()).xack ?? 0;
  const used = kids.map((k, i) => {
    const now = usage(k.proc.pid);
    return { cpu: now.cpu - atReady[i].cpu, writes: now.writes - atReady[i].writes };
  });
  const cpu = used.reduce((sum, u) => sum + u.cpu, 0);
  const writes = used.reduce((sum, u) => sum + u.writes, 0);
  for (const k of kids) k.proc.kill('SIGTERM');
  await Promise.all(kids.map((k) => k.exited));
  const seconds = (end - first) / 1000;
  if (VERBOSE)
    console.error(`    ${label}: ${seconds.toFixed(2)} s, ${cpu.toFixed(2)} s CPU, ${xacks} XACKs`);
  return { label, concurrency, seconds, rate: Math.round(N / seconds), xacks, cpu, writes };
}

/**
 * What a child used so far (Linux: /proc; else NaN): CPU seconds (user + system) and write system
 * calls (socket writes included). On a machine shared with other work the wall clock moves with
 * the others' load; these move less.
 */
function usage(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    const writes = /syscw: (\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1];
    return { cpu: (Number(stat[11]) + Number(stat[12])) / CLOCK_TICKS, writes: Number(writes) };
  } catch {
    return { cpu: NaN, writes: NaN };
  }
}

/** CLIENT LIST connections named `echo-stream-*`, by name. */
async function echoConnections() {
  const byName = {};
  let total = 0;
  for (const line of String(await redis.client('LIST')).split('\n')) {
    const name = / name=(\S*)/.exec(line)?.[1] ?? '';
    if (!name.startsWith('echo-stream-')) continue;
    byName[name] = (byName[name] ?? 0) + 1;
    total++;
  }
  return { total, byName };
}

/** Calls per command since the last CONFIG RESETSTAT (the bench's own INFO / RESETSTAT left out). */
async function commandCalls() {
  const out = {};
  for (const line of (await redis.info('commandstats')).split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (m && m[1] !== 'info' && m[1] !== 'config|resetstat' && m[1] !== 'client|list')
      out[m[1]] = Number(m[2]);
  }
  return out;
}

/** One process of 4 handlers x `partitions` + 1 plain handler, parked: connections, commands/s. */
async function idle(partitions) {
  const stream = `bench-idle-${partitions}`;
  const kid = child(stream, 'idle', partitions, { HANDLERS: '4', PLAIN: '1', ALONE: '1' });
  await kid.ready;
  await sleep(2000); // past the start-up burst (group creation, first sweeps)
  const connections = await echoConnections();
  await redis.config('RESETSTAT');
  const t0 = Date.now();
  await sleep(IDLE_S * 1000);
  const calls = await commandCalls();
  const seconds = (Date.now() - t0) / 1000;
  kid.proc.kill('SIGTERM');
  await kid.exited;
  const total = Object.values(calls).reduce((a, b) => a + b, 0);
  const top = Object.entries(calls)
    .sort((a, b) => b[1] - a[1])
    .map(([name, n]) => `${name} ${(n / seconds).toFixed(1)}`)
    .join(', ');
  return { partitions, connections, perSecond: total / seconds, top };
}

async function keyedPublish() {
  const { Test } = await import('@nestjs/testing');
  const moduleRef = await Test.createTestingModule({
    imports: [lib.EchoStreamModule.forRoot({ connection: server.url })],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  const producer = app.get(lib.StreamProducer);
  const time = async (opts) => {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N / 4; i++) await producer.publish('bench-pub', { n: i }, opts(i));
    return Number(process.hrtime.bigint() - t0) / 1e3 / (N / 4);
  };
  await producer.publish('bench-pub', { n: 0 }, { key: 'k0', partitions: P });
  const plain = await time(() => undefined);
  const keyed = await time((i) => ({ key: `k${i % KEYS}` }));
  await app.close();
  return { plainUs: plain, keyedUs: keyed };
}

/** One drain figure over the rounds: medians, and the ratio to plain paired round by round. */
function drainLine(label, concurrency, rounds) {
  const runs = rounds.map((r) => r[label]);
  const ratios = rounds.map((r) => r[label].rate / r['plain-1'].rate);
  const cpuRatios = rounds.map((r) => r[label].cpu / r['plain-1'].cpu);
  const mid = (pick) => median(runs.map(pick));
  const spread = (xs) =>
    xs.length > 1 ? ` [${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)}]` : '';
  return (
    `  drain ${label.padEnd(8)} concurrency ${String(concurrency).padEnd(2)} ` +
    `${mid((r) => r.seconds).toFixed(2)} s  ${Math.round(mid((r) => r.rate))} entries/s  ` +
    `(${median(ratios).toFixed(2)}x${spread(ratios)} plain-1)  ${Math.round(mid((r) => r.xacks))} XACKs, ` +
    `${Math.round(mid((r) => r.writes))} writes, ${mid((r) => r.cpu).toFixed(2)} s CPU ` +
    `(${median(cpuRatios).toFixed(2)}x${spread(cpuRatios)})` +
    (rounds.length > 1 ? `, median of ${rounds.length} rounds` : '')
  );
}

async function owners(stream) {
  const lease = await redis.hgetall(`{${stream}}:echo-leases:g`);
  const [s, us] = await redis.time();
  const now = Number(s) * 1000 + Math.floor(Number(us) / 1000);
  return Array.from({ length: P }, (_, i) =>
    lease[`o:${i}`] && Number(lease[`e:${i}`]) > now ? lease[`o:${i}`] : null,
  );
}

async function rebalance() {
  const stream = 'bench-rebalance';
  const a = child(stream, 'a', P);
  await a.ready;
  while ((await owners(stream)).some((o) => o !== 'a')) await sleep(5);
  const b = child(stream, 'b', P);
  const joinAt = await b.ready; // from the joiner's READY (its process start not counted)
  while ((await owners(stream)).filter((o) => o === 'b').length !== P / 2) await sleep(5);
  const split = Date.now() - joinAt;
  const stopAt = Date.now();
  a.proc.kill('SIGTERM');
  while ((await owners(stream)).some((o) => o !== 'b')) await sleep(5);
  const handOff = Date.now() - stopAt;
  b.proc.kill('SIGTERM');
  await Promise.all([a.exited, b.exited]);
  return { joinSplitMs: split, gracefulHandOffMs: handOff };
}

try {
  console.log(
    `partitioned streams: N=${N} entries, ${KEYS} keys, P=${P} partitions, no-op handler, batchSize 100`,
  );
  if (WORKLOADS.includes('drain'))
    for (const concurrency of CONCURRENCIES) {
      const labels = ['plain-1', 'part-1'];
      if (concurrency === Math.max(...CONCURRENCIES)) labels.push('part-3');
      const rounds = [];
      for (let round = 0; round < ROUNDS; round++) {
        // odd rounds run the partitioned drains first: neither side always runs on a warm machine
        const order = round % 2 === 0 ? labels : [...labels.slice(1), labels[0]];
        const byLabel = {};
        for (const label of order)
          byLabel[label] = await drain(
            `${label}-r${round}`,
            label === 'part-3' ? 3 : 1,
            label !== 'plain-1',
            concurrency,
          );
        rounds.push(byLabel);
      }
      for (const label of labels) console.log(drainLine(label, concurrency, rounds));
    }
  if (WORKLOADS.includes('publish')) {
    const pub = await keyedPublish();
    console.log(
      `  publish (sequential, ${N / 4} calls): ${pub.plainUs.toFixed(0)} us plain, ${pub.keyedUs.toFixed(0)} us keyed (${(pub.keyedUs / pub.plainUs).toFixed(2)}x)`,
    );
  }
  if (WORKLOADS.includes('rebalance')) {
    const rb = await rebalance();
    console.log(
      `  rebalance: a join split ${P} partitions in ${rb.joinSplitMs} ms; a graceful stop handed ${P / 2} over in ${rb.gracefulHandOffMs} ms`,
    );
  }
  if (WORKLOADS.includes('idle')) {
    const runs = [await idle(1), await idle(16)];
    for (const r of runs)
      console.log(
        `  idle, 4 handlers x ${String(r.partitions).padEnd(2)} partitions + 1 plain: ${r.connections.total} connections ${JSON.stringify(r.connections.byName)}; ${r.perSecond.toFixed(1)} commands/s over ${IDLE_S} s (${r.top})`,
      );
    console.log(
      `  idle, 4 x 16 vs 4 x 1: ${(runs[1].connections.total / runs[0].connections.total).toFixed(2)}x connections, ${(runs[1].perSecond / runs[0].perSecond).toFixed(2)}x commands/s`,
    );
  }
} finally {
  for (const c of children) c.kill('SIGKILL');
  redis.disconnect();
  await server.stop();
}
