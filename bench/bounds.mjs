#!/usr/bin/env node
// node bench/bounds.mjs (no build needed, ~1 min): what each guarantee costs at its best, on this
// machine and client, measured with hand-written ioredis loops (no library code) that do the least
// the guarantee needs; the library's own drains are measured by bench/partitions.mjs and
// bench/effectively-once.mjs. Each loop drains BENCH_BOUNDS_N (100,000) pre-filled entries of the
// bench's ~200-byte JSON payload (bench/lib/payload.mjs, with an `account` of 1,000) in a fresh
// child process, `JSON.parse` per entry as the library's handler path does; a partitioned entry
// also carries its key (the `pkey` field, as the library writes it), a plain one does not;
// BENCH_BOUNDS_ROUNDS (3) rounds, the order rotated, each loop as a ratio to the plain loop of its
// round (paired). Loops (BENCH_BOUNDS_LOOPS):
// - plain: the best plain loop: the next read in flight while a batch is handled, a batch's XACK
//   sent the moment it is handled (with that read), its reply not waited for before the next batch;
// - partitioned: 8 partition streams, 100 keys; one read naming all 8 (COUNT 100 each), the
//   entries of each key in waves (a key's next entry starts after its previous one's XACK reply:
//   "a replay never goes back", docs/partitions.md "Order"), one script call per wave XACKing its
//   entries on every stream, keys split in groups whose waves overlap each other's replies;
// - dedup: plain with `dedup`'s records, keyed by branded id: two reads in flight, each read's
//   records looked up (one MGET) the moment its reply is read, a turn of the event loop after each
//   batch (so the replies that came meanwhile are read and the look-up of the read after next goes
//   out), and each batch's XACK one script call that also writes a record per id (SET PX; the
//   script builds the keys from the branded ids: the record rides with the ack);
// - newerWins: `dedup`'s shape with a record per key (the payload's `account`) kept at the
//   highest branded id (a compare-and-set per entry in the XACK's script), the i-th entry of a key
//   in a read in wave i (a key's next entry after its last one's XACK reply);
// - dedupInRead: the look-up inside the read instead: each read one script call that reads
//   (XREADGROUP without BLOCK) and looks up the records of what it read (MGET);
// - exactlyOnce: plain, each entry's handler building an output entry (JSON.stringify), the
//   batch's commit one script call: this consumer's pending rows (one XPENDING of the batch's
//   range) fence every entry, then per entry SET NX of its record (a duplicate writes nothing),
//   XADD of its output, and one XACK; the least a fenced commit (docs/exactly-once.md) can do: no
//   type checks before the writes, no look-up before the handler.
// BENCH_BOUNDS_KEY_GROUPS (4), BENCH_BOUNDS_WAVE_ACK (`script`, or `xack`: an XACK per partition
// and wave) and BENCH_BOUNDS_KEY_ORDER (`0`: without the order rule, one wave per read) shape the
// partitioned loop; BENCH_NODE_ARGS: extra node flags of each child. Every entry is new: a loop
// that skips one fails.
// Printed per loop: entries/s median [min-max], the ratio to plain, and CPU per entry of the child
// process and of redis-server. Needs `redis-server` on the PATH (or ECHO_SERVER, as bench/run.mjs).
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  GROUP,
  KEY_GROUPS,
  KEYS,
  N,
  PARTITIONS,
  WAVE_ACK,
  keyOf,
  partitionOf,
} from './lib/bounds-loops.mjs';
import { accountPayload, streamFields } from './lib/payload.mjs';
import { pidCpuSeconds, startRedis } from './lib/redis-server.mjs';
import { median } from './lib/stats.mjs';

const CHILD = fileURLToPath(new URL('./lib/bounds-loops.mjs', import.meta.url));
const ROUNDS = Number(process.env.BENCH_BOUNDS_ROUNDS ?? 3);
/** The loops run: plain always (the ratios' base), then those of BENCH_BOUNDS_LOOPS. */
const LOOPS = [
  'plain',
  ...(process.env.BENCH_BOUNDS_LOOPS ?? 'partitioned,dedup,newerWins,dedupInRead,exactlyOnce')
    .split(',')
    .filter((loop) => loop !== 'plain'),
];
const streamOf = (loop, round) => `bounds:${loop}:${round}`;

/** An entry as the library writes it, its payload with one of 1,000 accounts (`newerWins`). */
const fieldsOf = (seq) => streamFields(seq, 0, accountPayload(seq, 1000));

async function prefill(admin, loop, stream) {
  const groupOn = async (s) => admin.xgroup('CREATE', s, GROUP, '0', 'MKSTREAM');
  const names =
    loop === 'partitioned'
      ? Array.from({ length: PARTITIONS }, (_, p) => partitionOf(stream, p))
      : [stream];
  for (const s of names) await groupOn(s);
  for (let first = 0; first < N; first += 1000) {
    const batch = admin.pipeline();
    for (let seq = first; seq < Math.min(N, first + 1000); seq++) {
      // a partitioned entry carries its key (the library's `pkey` field); a plain one does not
      if (loop === 'partitioned')
        batch.xadd(names[(seq % KEYS) % PARTITIONS], '*', ...fieldsOf(seq), 'pkey', keyOf(seq));
      else batch.xadd(stream, '*', ...fieldsOf(seq));
    }
    await batch.exec();
  }
}

function drain(url, loop, stream, redisPid) {
  return new Promise((resolvePromise, reject) => {
    const redis0 = pidCpuSeconds(redisPid);
    const child = fork(CHILD, [], {
      env: { ...process.env, BOUNDS_CHILD: JSON.stringify({ url, loop, stream }) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      execArgv: (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
    });
    let result;
    child.on('message', (m) => (result = m));
    child.on('exit', (code) => {
      if (!result || result.handled < N) reject(new Error(`${loop} exited ${code} short`));
      // every entry is new: a skip means a look-up that finds what is not there
      else if (result.skipped > 0)
        reject(new Error(`${loop} skipped ${result.skipped} new entries`));
      else resolvePromise({ ...result, redisCpu: pidCpuSeconds(redisPid) - redis0 });
    });
  });
}

async function parent() {
  const redis = await startRedis();
  const { admin } = redis;
  const version = /^redis_version:(.*)$/m.exec(await admin.info('server'))?.[1]?.trim();
  console.log(
    `bounds: Node ${process.version}, redis-server ${version}, ${ROUNDS} rounds of ` +
      `${N.toLocaleString('en-US')} entries, key groups ${KEY_GROUPS}, wave ack ${WAVE_ACK} ` +
      `(${new Date().toISOString()})`,
  );
  const runs = Object.fromEntries(LOOPS.map((l) => [l, []]));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const order = LOOPS.map((_, i) => LOOPS[(i + round) % LOOPS.length]);
      for (const loop of order) {
        const stream = streamOf(loop, round);
        await prefill(admin, loop, stream);
        runs[loop][round] = await drain(redis.url, loop, stream, redis.pid);
        await admin.flushall();
      }
    }
  } finally {
    await redis.stop();
  }
  const fmt = (x) => Math.round(x).toLocaleString('en-US');
  for (const loop of LOOPS) {
    const rs = runs[loop];
    const rates = rs.map((r) => N / r.seconds);
    const ratios = rs.map((r, i) => runs.plain[i].seconds / r.seconds);
    const us = (xs) => ((median(xs) * 1e6) / N).toFixed(1);
    console.log(
      `${loop.padEnd(12)} ${fmt(median(rates))}/s [${fmt(Math.min(...rates))}-` +
        `${fmt(Math.max(...rates))}]  ratio ${median(ratios).toFixed(2)} ` +
        `[${ratios.map((x) => x.toFixed(2)).join(' ')}]  CPU µs/entry node ` +
        `${us(rs.map((r) => r.cpu))} redis ${us(rs.map((r) => r.redisCpu))}`,
    );
  }
}

await parent();
