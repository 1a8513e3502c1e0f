// What the contender workloads (drain, retries, latency, idle, memory) share: the names of the
// bench stream, group and queue, the child config, pre-filling, what a run left over and the
// validity gates. The runner's own connection does this; nothing else runs while a contender is
// measured.
import { Queue } from 'bullmq';
import { sumCalls } from '../lib/redis-server.mjs';
import { makePayload, streamFields } from '../lib/payload.mjs';

export const STREAM = 'bench:orders';
export const GROUP = 'bench';
export const QUEUE = 'bench-orders';
/** The library's default blockMs; the raw loop uses the same. */
export const BLOCK_MS = 5000;

export const log = (...args) => console.error(...args);
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The contenders of `ctx.contenders` that run `workload`. */
export function contendersOf(ctx, workload) {
  return ctx.contenders.filter((c) => c.workloads.includes(workload));
}

/** `list` started at `round` (mod its length): each round runs the contenders in another order. */
export function rotated(list, round) {
  const k = round % list.length;
  return list.slice(k).concat(list.slice(0, k));
}

/** The BENCH_CHILD config of contender `c` (bench/lib/child.mjs reads it). */
export function childCfg(ctx, c, extra) {
  return {
    url: ctx.redis.url,
    stream: STREAM,
    group: GROUP,
    queue: QUEUE,
    lib: ctx.options.lib,
    ...c.cfg,
    ...extra,
  };
}

export async function prefillStream(admin, n) {
  const CHUNK = 1000;
  const inFlight = [];
  for (let from = 0; from < n; from += CHUNK) {
    const p = admin.pipeline();
    for (let seq = from; seq < Math.min(n, from + CHUNK); seq++)
      p.xadd(STREAM, '*', ...streamFields(seq));
    inFlight.push(p.exec());
    if (inFlight.length >= 4) await inFlight.shift();
  }
  await Promise.all(inFlight);
}

async function withQueue(redis, fn) {
  const url = new URL(redis.url);
  const queue = new Queue(QUEUE, {
    connection: { host: url.hostname, port: Number(url.port), maxRetriesPerRequest: null },
  });
  try {
    return await fn(queue);
  } finally {
    await queue.close();
  }
}

export async function prefillQueue(redis, n) {
  await withQueue(redis, async (queue) => {
    const CHUNK = 1000;
    for (let from = 0; from < n; from += CHUNK) {
      const jobs = [];
      for (let seq = from; seq < Math.min(n, from + CHUNK); seq++)
        jobs.push({ name: 'm', data: makePayload(seq), opts: { removeOnComplete: true } });
      await queue.addBulk(jobs);
    }
  });
}

/** What is still unfinished after a run: the group's PEL (streams), or every job state (BullMQ). */
async function leftOver(c, redis) {
  if (c.kind === 'bullmq') {
    const counts = await withQueue(redis, (q) => q.getJobCounts());
    return { pending: Object.values(counts).reduce((a, b) => a + b, 0), detail: counts };
  }
  const summary = await redis.admin.xpending(STREAM, GROUP);
  const dlq = await redis.admin.exists(`${STREAM}:dlq`);
  return { pending: Number(summary[0]), deadLetters: dlq };
}

/** leftOver(), or `{ pending: NaN, error }` when it could not be read. */
export async function leftOverOrError(c, redis) {
  try {
    return await leftOver(c, redis);
  } catch (err) {
    return { pending: NaN, error: err.message };
  }
}

/** Why a run is INVALID (empty: valid): crashed, handled != expected, duplicates, errors, left over. */
export function gates(res, expected, left) {
  const reasons = [];
  if (res.fatal) reasons.push(`crashed: ${res.fatal.split('\n')[0]}`);
  if (res.handled !== expected) reasons.push(`handled ${res.handled} != ${expected}`);
  if (res.duplicates) reasons.push(`${res.duplicates} duplicates`);
  if (res.errors) reasons.push(`${res.errors} errors`);
  if (left && left.pending !== 0) reasons.push(`${left.pending} left pending`);
  if (left && left.deadLetters) reasons.push('dead letters written');
  // the retry workload: every planned failure came back exactly once, as a retry
  const r = res.retry;
  if (r && (r.failed !== r.retried || r.totalRetries !== r.failed))
    reasons.push(`${r.failed} failures, ${r.retried} second attempts, ${r.totalRetries} retries`);
  return reasons;
}

const CALLS_OF_RUNNER = ['info', 'config|resetstat']; // the runner's own commands in a window

/** INFO commandstats calls -> { total, detail } without the runner's own commands. */
export function commandsOf(stats) {
  const detail = {};
  for (const [cmd, calls] of Object.entries(stats))
    if (!CALLS_OF_RUNNER.includes(cmd)) detail[cmd] = calls;
  return { total: sumCalls(detail), detail };
}
