#!/usr/bin/env node
// Partitioned streams (docs/partitions.md), after npm run build: one throw-away redis-server;
//   - drain: N entries of KEYS keys, pre-filled, drained by 1 process on the plain stream, by 1
//     and by 3 processes on a partitioned stream of P partitions (time from the first READY until
//     every group's lag and pending are 0; startup and the first rebalance included);
//   - keyed publish: N sequential publish() calls with { key } vs without;
//   - rebalance: a second process joins a running one (time until the partitions are split), then
//     the first stops gracefully (time until the second owns them all).
// Knobs: BENCH_PART_N=20000, BENCH_PART_P=8, BENCH_PART_KEYS=100. Figures are printed, not asserted.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startRedis } from './lib/redis-server.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const lib = createRequire(import.meta.url)(join(root, 'dist', 'index.js'));
const N = Number(process.env.BENCH_PART_N ?? 20_000);
const P = Number(process.env.BENCH_PART_P ?? 8);
const KEYS = Number(process.env.BENCH_PART_KEYS ?? 100);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const server = await startRedis();
const redis = new Redis(server.url);
const children = new Set();

function child(stream, name, partitions) {
  const proc = spawn(process.execPath, [join(root, 'bench', 'lib', 'partition-child.mjs')], {
    cwd: root,
    env: {
      ...process.env,
      REDIS_URL: server.url,
      STREAM: stream,
      NAME: name,
      PARTITIONS: partitions ? String(partitions) : '',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
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

async function drain(label, processes, partitioned) {
  const stream = `bench-${label}`;
  if (partitioned) await redis.set(`{${stream}}:echo-partitions`, String(P));
  await fill(stream, partitioned);
  const streams = partitioned ? Array.from({ length: P }, (_, i) => `${stream}:p:${i}`) : [stream];
  const kids = Array.from({ length: processes }, (_, i) =>
    child(stream, `c${i}`, partitioned ? P : null),
  );
  const first = await Promise.race(kids.map((k) => k.ready));
  const end = await drained(streams);
  for (const k of kids) k.proc.kill('SIGTERM');
  await Promise.all(kids.map((k) => k.exited));
  const seconds = (end - first) / 1000;
  return { label, seconds, rate: Math.round(N / seconds) };
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
  const results = [
    await drain('plain-1', 1, false),
    await drain('part-1', 1, true),
    await drain('part-3', 3, true),
  ];
  const base = results[0].rate;
  console.log(
    `partitioned streams: N=${N} entries, ${KEYS} keys, P=${P} partitions, no-op handler, concurrency 8`,
  );
  for (const r of results)
    console.log(
      `  drain ${r.label.padEnd(8)} ${r.seconds.toFixed(2)} s  ${r.rate} entries/s  (${(r.rate / base).toFixed(2)}x plain-1)`,
    );
  const pub = await keyedPublish();
  console.log(
    `  publish (sequential, ${N / 4} calls): ${pub.plainUs.toFixed(0)} us plain, ${pub.keyedUs.toFixed(0)} us keyed (${(pub.keyedUs / pub.plainUs).toFixed(2)}x)`,
  );
  const rb = await rebalance();
  console.log(
    `  rebalance: a join split ${P} partitions in ${rb.joinSplitMs} ms; a graceful stop handed ${P / 2} over in ${rb.gracefulHandOffMs} ms`,
  );
} finally {
  for (const c of children) c.kill('SIGKILL');
  redis.disconnect();
  await server.stop();
}
