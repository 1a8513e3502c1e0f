/**
 * The exactly-once oracle's run (docs/exactly-once.md), shared by its single-server and Cluster
 * specs: a two-stage pipeline A -> B -> C run by three processes (pipeline-process.mjs: stage 1
 * reads A and writes each entry on to B and its amount into counter SUM1; stage 2 reads B and
 * writes on to C and into SUM2), while a backlog is published in bursts and:
 *   - a busy process (entries in hand) is SIGKILLed and restarted, again and again;
 *   - one process is frozen (SIGSTOP) past `minIdleMs`, its entries taken over by its peers, and
 *     woken (its commits must be fenced, never written a second time);
 *   - where the target can: Redis is killed and restarted from its AOF, and every link is cut,
 *     half of the time with commands and replies in flight.
 * What the run left (how many copies of each entry B and C hold, the counters) is what the specs
 * assert.
 */
import * as path from 'node:path';
import type { Cluster, Redis } from 'ioredis';
import { sleep, waitFor } from '../../support/wait-for';
import { prng, Supervisor } from './chaos-supervisor';
import { ConsumerProcess, makeWorkDir } from './consumer-fleet';
import { readStream } from './oracle';

const PIPELINE_SCRIPT = path.join('test', 'faults', 'support', 'pipeline-process.mjs');
const PROCESSES = 3;
const BURST = 100;
const BURST_EVERY_MS = 400;
const KILL_EVERY_MS = 1500;
/** How long a kill waits for one sample of an outbox's length (then it counts 0). */
const SAMPLE_MS = 100;
const CUT_EVERY_MS = 700;
export const MIN_IDLE_MS = 1500;

/** The streams and counters of one run (SUM1 in A's slot, SUM2 in B's on a Cluster). */
export interface PipelineNames {
  a: string;
  b: string;
  c: string;
  sum1: string;
  sum2: string;
}

/** Where one run happens, and the chaos its target allows besides kills and a freeze. */
export interface PipelineTarget {
  /** The producer's and the checks' client. */
  readonly redis: Redis | Cluster;
  /** What the processes connect to: `redisUrl`, and `env` (a Cluster's `CLUSTER_NODES`). */
  readonly redisUrl: string;
  readonly env?: Record<string, string>;
  readonly names: PipelineNames;
  /** Cuts every link (`delayFirst`: traffic held back first, so replies are lost in flight). */
  readonly cutLinks?: (delayFirst: boolean) => Promise<void>;
  /** Kills Redis and restarts it from its AOF. */
  readonly restartRedis?: () => Promise<void>;
  /**
   * Stage 1's and stage 2's outboxes (a Cluster: what was committed and not yet forwarded to B and
   * to C). Their lengths are sampled at each kill, and the run is over only once both are empty.
   */
  readonly outboxes?: readonly [stage1: string, stage2: string];
}

/** What one run left in Redis, and what its chaos did. */
export interface PipelineRun {
  published: number;
  expectedSum: number;
  /** Per stream, how many entries carry each `n`. */
  copies: { b: Map<number, number>; c: Map<number, number> };
  sum1: number;
  sum2: number;
  kills: number;
  frozen: boolean;
  restarted: boolean;
  cuts: number;
  /** Commits logged as fenced, and as refused for a write that could not run (none expected). */
  fenced: number;
  invalid: number;
  /** The largest sum of the outboxes' lengths seen at a kill. */
  heldAtKill: number;
}

const amountOf = (n: number): number => (n % 7) + 1;

/** How many entries of `stream` carry each `n` in their payload. */
async function copiesOf(redis: Redis | Cluster, stream: string): Promise<Map<number, number>> {
  const copies = new Map<number, number>();
  for (const [, fields] of await readStream(redis as Redis, stream)) {
    const { n } = JSON.parse(fields[fields.indexOf('data') + 1]) as { n: number };
    copies.set(n, (copies.get(n) ?? 0) + 1);
  }
  return copies;
}

/**
 * True once `group` of `stream` read every entry and acked it: nothing pending, and the group's
 * last delivered id is the stream's last id. (Not the group's `lag`: after a restart from the AOF
 * it can be null, unknown, with entries still unread.)
 */
async function caughtUp(redis: Redis | Cluster, stream: string, group: string): Promise<boolean> {
  const info = (await redis.xinfo('STREAM', stream).catch(() => null)) as unknown[] | null;
  const groups = (await redis.xinfo('GROUPS', stream).catch(() => [])) as unknown[][];
  const row = groups.find((g) => g[g.indexOf('name') + 1] === group);
  if (!info || !row) return false;
  const pending = Number(row[row.indexOf('pending') + 1]);
  const delivered = row[row.indexOf('last-delivered-id') + 1];
  return pending === 0 && delivered === info[info.indexOf('last-generated-id') + 1];
}

/** True once `outbox` (if any) is empty: every output committed there reached its stream. */
async function forwarded(redis: Redis | Cluster, outbox: string | undefined): Promise<boolean> {
  return outbox === undefined || (await redis.xlen(outbox)) === 0;
}

/** Runs the pipeline with `exactlyOnce` on or off through `seconds` of chaos. */
export async function runPipeline(
  target: PipelineTarget,
  exactlyOnce: boolean,
  seed: number,
  seconds: number,
): Promise<PipelineRun> {
  const random = prng(seed);
  const { redis, names } = target;
  const ledger = path.join(makeWorkDir(), 'unused.ledger');
  const procs = Array.from(
    { length: PROCESSES },
    (_, i) =>
      new ConsumerProcess({
        redisUrl: target.redisUrl,
        stream: names.a,
        group: 'stage1',
        name: `p${i}`,
        ledger,
        script: PIPELINE_SCRIPT,
        handleMs: 2,
        shutdownTimeoutMs: 2000,
        env: {
          ...target.env,
          PIPELINE: JSON.stringify(names),
          EXACTLY_ONCE: exactlyOnce ? '1' : '0',
        },
        defaults: {
          blockMs: 500,
          minIdleMs: MIN_IDLE_MS,
          claimIntervalMs: 200,
          batchSize: 20,
          maxDeliveries: 1000,
          retry: { type: 'fixed', delayMs: 50 },
        },
      }),
  );
  await Promise.all(procs.map((p) => p.start(30_000)));
  const supervisor = new Supervisor(procs);

  // the producer writes straight to the server (its writes are not what is tested), each burst
  // one MULTI: all or nothing; it holds off while Redis restarts
  let published = 0;
  let expectedSum = 0;
  let redisDown: Promise<void> | null = null;
  /** The burst being written (a restart waits for it: a MULTI cut half-way is not the test). */
  let burst: Promise<void> = Promise.resolve();
  let chaosOn = true;
  const producing = (async () => {
    while (chaosOn) {
      if (redisDown) await redisDown;
      burst = (async () => {
        const multi = redis.multi();
        for (let i = 0; i < BURST; i++) {
          const n = published + i;
          const data = JSON.stringify({ n, amount: amountOf(n) });
          multi.xadd(names.a, '*', 'id', `e${n}`, 'data', data);
        }
        await multi.exec();
        for (let i = 0; i < BURST; i++) expectedSum += amountOf(published + i);
        published += BURST;
      })();
      await burst;
      await sleep(BURST_EVERY_MS);
    }
  })();

  let cuts = 0;
  const cutting = (async () => {
    const { cutLinks } = target;
    if (!cutLinks) return;
    while (chaosOn) {
      await sleep(CUT_EVERY_MS * (0.5 + random()));
      if (!chaosOn) break;
      await cutLinks(random() < 0.5);
      cuts++;
    }
  })();

  /** The process frozen now: not killed meanwhile (it must wake, and be fenced). */
  let frozenNow: ConsumerProcess | undefined;
  /**
   * The process the kill loop is killing now: it counts as running until its exit is seen, and
   * must not be frozen meanwhile (it would die frozen, and the freeze's SIGCONT fail with ESRCH).
   */
  let dyingNow: ConsumerProcess | undefined;
  const killable = (): ConsumerProcess[] => procs.filter((p) => p !== frozenNow && p !== dyingNow);
  const busy = (): ConsumerProcess | undefined =>
    killable().find((p) => p.isRunning() && p.inHand() > 0);

  // once, a quarter in: frozen past minIdleMs with entries in hand; its peers take them over and
  // commit them, and its own commits, when it wakes, must be fenced
  let frozen = false;
  const freezing = (async () => {
    await sleep((seconds * 1000) / 4);
    while (chaosOn && !frozen) {
      const victim = busy();
      const pid = victim?.pid;
      if (pid === undefined) {
        await sleep(20);
        continue;
      }
      frozen = true;
      frozenNow = victim;
      process.kill(pid, 'SIGSTOP');
      await sleep(MIN_IDLE_MS + 1500);
      process.kill(pid, 'SIGCONT');
      frozenNow = undefined;
    }
  })();

  // once, half-way: Redis killed and restarted from its AOF
  let restarted = false;
  const restarting = (async () => {
    const { restartRedis } = target;
    if (!restartRedis) return;
    await sleep((seconds * 1000) / 2);
    let up: () => void = () => undefined;
    redisDown = new Promise((resolve) => (up = resolve));
    await burst;
    await restartRedis();
    restarted = true;
    redisDown = null;
    up();
  })();

  let heldAtKill = 0;
  const killing = (async () => {
    while (chaosOn) {
      await sleep(KILL_EVERY_MS * (0.5 + random()));
      if (!chaosOn) break;
      // sampled before the victim is chosen: no await between the choice and the kill, in which
      // the freeze could take the same process; at most SAMPLE_MS a key, so Redis down (a
      // Cluster's masters restarting: 1.5 s here) does not hold the kills back
      let held = 0;
      for (const key of target.outboxes ?? []) held += await sampled(redis.xlen(key));
      heldAtKill = Math.max(heldAtKill, held);
      // a busy victim: entries in hand, their effects perhaps written, not yet acked
      const deadline = Date.now() + 500;
      let victim = busy();
      while (!victim && Date.now() < deadline) {
        await sleep(10);
        victim = busy();
      }
      const others = killable();
      dyingNow = victim ?? others[Math.floor(random() * others.length)];
      try {
        await supervisor.killAndRestart(dyingNow);
      } finally {
        dyingNow = undefined;
      }
    }
  })();

  await sleep(seconds * 1000);
  chaosOn = false;
  await Promise.all([producing, cutting, killing, freezing, restarting]);
  await supervisor.heal();
  // in the pipeline's order, so nothing moves behind a check that passed: stage 1 acked every
  // entry of A, its outbox reached B (a forward XADDs before it XDELs), stage 2 acked all of B,
  // its outbox reached C. (Without the outboxes a check passed while stage 1's last outputs were
  // still in its outbox: B got them a moment later, C and SUM2 never did.)
  const [outbox1, outbox2] = target.outboxes ?? [];
  await waitFor(
    async () =>
      (await caughtUp(redis, names.a, 'stage1')) &&
      (await forwarded(redis, outbox1)) &&
      (await caughtUp(redis, names.b, 'stage2')) &&
      (await forwarded(redis, outbox2)),
    { timeoutMs: 60_000, intervalMs: 200, message: 'both stages caught up, outboxes forwarded' },
  );
  // what the processes logged (their last lines): commits fenced, and refused as invalid
  const logged = (pattern: RegExp): number =>
    procs.reduce((n, p) => n + (p.errors.match(pattern) ?? []).length, 0);
  const run: PipelineRun = {
    published,
    expectedSum,
    copies: { b: await copiesOf(redis, names.b), c: await copiesOf(redis, names.c) },
    sum1: Number(await redis.get(names.sum1)),
    sum2: Number(await redis.get(names.sum2)),
    kills: supervisor.kills,
    frozen,
    restarted,
    cuts,
    fenced: logged(/another consumer's now/g),
    invalid: logged(/stays pending and runs again/g),
    heldAtKill,
  };
  await Promise.all(procs.map((p) => p.kill('SIGTERM')));
  return run;
}

/** Entries of a stream beyond one per `n`, and the `n`s missing. */
export function extraAndMissing(
  copies: Map<number, number>,
  published: number,
): { extra: number; missing: number[] } {
  let extra = 0;
  const missing: number[] = [];
  for (let n = 0; n < published; n++) {
    const k = copies.get(n) ?? 0;
    if (k === 0) missing.push(n);
    else extra += k - 1;
  }
  return { extra, missing };
}

/** One line about a run, for the test's output. */
export function describeRun(label: string, seed: number, run: PipelineRun): string {
  const b = extraAndMissing(run.copies.b, run.published);
  const c = extraAndMissing(run.copies.c, run.published);
  return (
    `${label} (seed ${seed}): ${run.published} entries, ${run.kills} SIGKILLs of busy processes, ` +
    `frozen ${run.frozen}, Redis restarted ${run.restarted}, ${run.cuts} link cuts; ` +
    `B: ${b.extra} extra, ${b.missing.length} missing; C: ${c.extra} extra, ${c.missing.length} ` +
    `missing; SUM1 ${run.sum1 - run.expectedSum} over, SUM2 ${run.sum2 - run.expectedSum} over; ` +
    `commits logged fenced ${run.fenced}, refused as invalid ${run.invalid}; at most ` +
    `${run.heldAtKill} outputs in the outboxes at a kill`
  );
}

/** A length within SAMPLE_MS, else 0 (the figure it feeds is reported, never asserted). */
function sampled(length: Promise<number>): Promise<number> {
  return Promise.race([length.catch(() => 0), sleep(SAMPLE_MS).then(() => 0)]);
}
