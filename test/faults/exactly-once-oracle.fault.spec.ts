/**
 * The exactly-once oracle (docs/exactly-once.md): a two-stage pipeline A -> B -> C run by three
 * processes (each runs both stages: stage 1 reads A and writes each entry on to B and its amount
 * into counter SUM1; stage 2 reads B and writes on to C and into SUM2), through a TCP proxy, while
 * a backlog is published in bursts and:
 *   - a busy process (entries in hand) is SIGKILLed and restarted, again and again;
 *   - one process is frozen (SIGSTOP) past `minIdleMs`, its entries taken over by its peers, and
 *     woken (its commits must be fenced, never written a second time);
 *   - Redis is killed and restarted from its AOF (`appendfsync always`);
 *   - the proxy cuts every link, half of the time with commands and replies in flight.
 * With `exactlyOnce: true`, C then holds exactly one entry per entry of A, so does B, and both
 * counters hold their exact sums. The same run with `exactlyOnce: false` (the stages publish with
 * StreamProducer and INCRBY, then return) shows the duplicates it prevents.
 *
 * About 12 s of chaos per run. `CHAOS_SECONDS` runs longer; `CHAOS_SEED` replays the choices.
 */
import * as path from 'node:path';
import type { Redis } from 'ioredis';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { TcpProxy } from '../support/tcp-proxy';
import { sleep, waitFor } from '../support/wait-for';
import { prng, Supervisor } from './support/chaos-supervisor';
import {
  assertBuilt,
  ConsumerProcess,
  makeWorkDir,
  stopAllConsumerProcesses,
} from './support/consumer-fleet';

const CHAOS_SECONDS = Number(process.env.CHAOS_SECONDS ?? 12);
const SEED = Number(process.env.CHAOS_SEED ?? Date.now() % 2 ** 31);
const PIPELINE_SCRIPT = path.join('test', 'faults', 'support', 'pipeline-process.mjs');
const PROCESSES = 3;
const BURST = 100;
const BURST_EVERY_MS = 400;
const KILL_EVERY_MS = 1500;
const CUT_EVERY_MS = 700;
const MIN_IDLE_MS = 1500;

afterAll(async () => {
  await stopAllConsumerProcesses();
  await stopAllRedisServers();
});

/** What one run left in Redis, and what its chaos did. */
interface PipelineRun {
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
}

const amountOf = (n: number): number => (n % 7) + 1;

/** How many entries of `stream` carry each `n` in their payload. */
async function copiesOf(redis: Redis, stream: string): Promise<Map<number, number>> {
  const copies = new Map<number, number>();
  for (let from = '-'; ;) {
    const page = await redis.xrange(stream, from, '+', 'COUNT', 1000);
    for (const [, fields] of page) {
      const { n } = JSON.parse(fields[fields.indexOf('data') + 1]) as { n: number };
      copies.set(n, (copies.get(n) ?? 0) + 1);
    }
    if (page.length < 1000) return copies;
    from = `(${page[page.length - 1][0]}`;
  }
}

/** True once `group` of `stream` read every entry and acked it. */
async function caughtUp(redis: Redis, stream: string, group: string): Promise<boolean> {
  const groups = (await redis.xinfo('GROUPS', stream).catch(() => [])) as unknown[][];
  const row = groups.find((g) => g[g.indexOf('name') + 1] === group);
  if (!row) return false;
  const pending = Number(row[row.indexOf('pending') + 1]);
  const lag = row[row.indexOf('lag') + 1];
  return pending === 0 && (lag === 0 || lag === '0' || lag === null) && lag !== undefined;
}

async function runPipeline(exactlyOnce: boolean, seed: number): Promise<PipelineRun> {
  const random = prng(seed);
  const server = await RedisServer.start({ appendonly: true, appendfsync: 'always' });
  const proxy = await TcpProxy.start(server.port);
  const tag = `{eo-${exactlyOnce ? 'x' : 'a'}-${process.pid}}`;
  const names = {
    a: `${tag}:a`,
    b: `${tag}:b`,
    c: `${tag}:c`,
    sum1: `${tag}:sum1`,
    sum2: `${tag}:sum2`,
  };
  const ledger = path.join(makeWorkDir(), 'unused.ledger');
  const procs = Array.from(
    { length: PROCESSES },
    (_, i) =>
      new ConsumerProcess({
        redisUrl: `redis://127.0.0.1:${proxy.port}`,
        stream: names.a,
        group: 'stage1',
        name: `p${i}`,
        ledger,
        script: PIPELINE_SCRIPT,
        handleMs: 2,
        shutdownTimeoutMs: 2000,
        env: { PIPELINE: JSON.stringify(names), EXACTLY_ONCE: exactlyOnce ? '1' : '0' },
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
  const redis = server.client();

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
    while (chaosOn) {
      await sleep(CUT_EVERY_MS * (0.5 + random()));
      if (!chaosOn) break;
      if (random() < 0.5) {
        // traffic held back each way, then the link dies under it: replies lost in flight
        proxy.setDelay(50);
        await sleep(120);
      }
      proxy.cutAll();
      proxy.setDelay(0);
      cuts++;
    }
  })();

  /** The process frozen now: not killed meanwhile (it must wake, and be fenced). */
  let frozenNow: ConsumerProcess | undefined;
  const killable = (): ConsumerProcess[] => procs.filter((p) => p !== frozenNow);
  const busy = (): ConsumerProcess | undefined =>
    killable().find((p) => p.isRunning() && p.inHand() > 0);

  // once, a quarter in: frozen past minIdleMs with entries in hand; its peers take them over and
  // commit them, and its own commits, when it wakes, must be fenced
  let frozen = false;
  const freezing = (async () => {
    await sleep((CHAOS_SECONDS * 1000) / 4);
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
    await sleep((CHAOS_SECONDS * 1000) / 2);
    let up: () => void = () => undefined;
    redisDown = new Promise((resolve) => (up = resolve));
    await burst;
    await server.kill('SIGKILL');
    await sleep(300);
    await server.restart();
    restarted = true;
    redisDown = null;
    up();
  })();

  const killing = (async () => {
    while (chaosOn) {
      await sleep(KILL_EVERY_MS * (0.5 + random()));
      if (!chaosOn) break;
      // a busy victim: entries in hand, their effects perhaps written, not yet acked
      const deadline = Date.now() + 500;
      let victim = busy();
      while (!victim && Date.now() < deadline) {
        await sleep(10);
        victim = busy();
      }
      const others = killable();
      await supervisor.killAndRestart(victim ?? others[Math.floor(random() * others.length)]);
    }
  })();

  await sleep(CHAOS_SECONDS * 1000);
  chaosOn = false;
  await Promise.all([producing, cutting, killing, freezing, restarting]);
  await supervisor.heal();
  await waitFor(
    async () =>
      (await caughtUp(redis, names.a, 'stage1')) && (await caughtUp(redis, names.b, 'stage2')),
    { timeoutMs: 60_000, intervalMs: 200, message: 'both stages caught up' },
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
  };
  await Promise.all(procs.map((p) => p.kill('SIGTERM')));
  redis.disconnect();
  await proxy.stop();
  return run;
}

/** Entries of a stream beyond one per `n`, and the `n`s missing. */
function extraAndMissing(copies: Map<number, number>, published: number) {
  let extra = 0;
  const missing: number[] = [];
  for (let n = 0; n < published; n++) {
    const k = copies.get(n) ?? 0;
    if (k === 0) missing.push(n);
    else extra += k - 1;
  }
  return { extra, missing };
}

function describeRun(label: string, run: PipelineRun): string {
  const b = extraAndMissing(run.copies.b, run.published);
  const c = extraAndMissing(run.copies.c, run.published);
  return (
    `${label} (seed ${SEED}): ${run.published} entries, ${run.kills} SIGKILLs of busy processes, ` +
    `frozen ${run.frozen}, Redis restarted ${run.restarted}, ${run.cuts} link cuts; ` +
    `B: ${b.extra} extra, ${b.missing.length} missing; C: ${c.extra} extra, ${c.missing.length} ` +
    `missing; SUM1 ${run.sum1 - run.expectedSum} over, SUM2 ${run.sum2 - run.expectedSum} over; ` +
    `commits logged fenced ${run.fenced}, refused as invalid ${run.invalid}`
  );
}

beforeAll(() => assertBuilt());

describe('exactly once through kills, a freeze, a Redis restart and cut links', () => {
  it(
    'exactlyOnce: every entry of A reaches B and C once, the counters hold their exact sums',
    async () => {
      const run = await runPipeline(true, SEED);
      console.log(describeRun('exactlyOnce: true', run));
      const b = extraAndMissing(run.copies.b, run.published);
      const c = extraAndMissing(run.copies.c, run.published);
      expect({ b, c }).toEqual({ b: { extra: 0, missing: [] }, c: { extra: 0, missing: [] } });
      expect([run.sum1, run.sum2]).toEqual([run.expectedSum, run.expectedSum]);
      expect(run.invalid).toBe(0);
      // the chaos did happen
      expect(run.kills).toBeGreaterThanOrEqual(3);
      expect([run.frozen, run.restarted]).toEqual([true, true]);
      expect(run.cuts).toBeGreaterThanOrEqual(5);
    },
    (CHAOS_SECONDS + 120) * 1000,
  );

  it(
    'at-least-once (exactlyOnce: false), the same chaos: outputs and sums written twice',
    async () => {
      const run = await runPipeline(false, SEED + 1);
      console.log(describeRun('exactlyOnce: false', run));
      const b = extraAndMissing(run.copies.b, run.published);
      const c = extraAndMissing(run.copies.c, run.published);
      // nothing lost either way; what exactlyOnce prevents is the extra
      expect([b.missing, c.missing]).toEqual([[], []]);
      expect(b.extra + c.extra).toBeGreaterThan(0);
      expect(run.sum1 + run.sum2).toBeGreaterThan(2 * run.expectedSum);
    },
    (CHAOS_SECONDS + 120) * 1000,
  );
});
