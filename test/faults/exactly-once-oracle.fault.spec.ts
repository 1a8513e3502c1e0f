/**
 * The exactly-once oracle (docs/exactly-once.md) on one server: the two-stage pipeline A -> B -> C
 * of support/pipeline-oracle.ts, run by three processes through a TCP proxy, while a backlog is
 * published in bursts, busy processes are SIGKILLed and restarted, one is frozen past
 * `minIdleMs` and woken, Redis is killed and restarted from its AOF (`appendfsync always`) and
 * the proxy cuts every link, half of the time with commands and replies in flight. With
 * `exactlyOnce: true`, C then holds exactly one entry per entry of A, so does B, and both counters
 * hold their exact sums. Under `ECHO_SOAK=1` the same run with `exactlyOnce: false` (the stages
 * publish with StreamProducer and INCRBY, then return) shows the duplicates it prevents (in the
 * suite, effectively-once-chaos shows at-least-once's duplicates after a crash).
 *
 * About 10 s of chaos. `CHAOS_SECONDS` runs longer; `CHAOS_SEED` replays the choices.
 */
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { soaking } from '../support/soak';
import { TcpProxy } from '../support/tcp-proxy';
import { sleep } from '../support/wait-for';
import { assertBuilt, stopAllConsumerProcesses } from './support/consumer-fleet';
import {
  describeRun,
  extraAndMissing,
  runPipeline,
  type PipelineRun,
} from './support/pipeline-oracle';

const CHAOS_SECONDS = Number(process.env.CHAOS_SECONDS ?? 10);
const SEED = Number(process.env.CHAOS_SEED ?? Date.now() % 2 ** 31);

afterAll(async () => {
  await stopAllConsumerProcesses();
  await stopAllRedisServers();
});

/** One run on a server of its own, through a proxy that cuts its links. */
async function runOnServer(exactlyOnce: boolean, seed: number): Promise<PipelineRun> {
  const server = await RedisServer.start({ appendonly: true, appendfsync: 'always' });
  const proxy = await TcpProxy.start(server.port);
  const tag = `{eo-${exactlyOnce ? 'x' : 'a'}-${process.pid}}`;
  const redis = server.client();
  try {
    return await runPipeline(
      {
        redis,
        redisUrl: `redis://127.0.0.1:${proxy.port}`,
        names: {
          a: `${tag}:a`,
          b: `${tag}:b`,
          c: `${tag}:c`,
          sum1: `${tag}:sum1`,
          sum2: `${tag}:sum2`,
        },
        cutLinks: async (delayFirst) => {
          if (delayFirst) {
            // traffic held back each way, then the link dies under it: replies lost in flight
            proxy.setDelay(50);
            await sleep(120);
          }
          proxy.cutAll();
          proxy.setDelay(0);
        },
        restartRedis: async () => {
          await server.kill('SIGKILL');
          await sleep(300);
          await server.restart();
        },
      },
      exactlyOnce,
      seed,
      CHAOS_SECONDS,
    );
  } finally {
    redis.disconnect();
    await proxy.stop();
  }
}

beforeAll(() => assertBuilt());

describe('exactly once through kills, a freeze, a Redis restart and cut links', () => {
  it(
    'exactlyOnce: every entry of A reaches B and C once, the counters hold their exact sums',
    async () => {
      const run = await runOnServer(true, SEED);
      console.log(describeRun('exactlyOnce: true', SEED, run));
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

  (soaking() ? it : it.skip)(
    'at-least-once (exactlyOnce: false), the same chaos: outputs and sums written twice',
    async () => {
      const run = await runOnServer(false, SEED + 1);
      console.log(describeRun('exactlyOnce: false', SEED + 1, run));
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
