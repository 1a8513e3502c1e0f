/**
 * S16, the chaos run (issue 5): three consumer processes (stable names c0..c2, the BUILT package)
 * are SIGKILLed and restarted at random every ~1.5 s while a producer publishes a few thousand
 * entries, and Redis itself is SIGKILLed and restarted once mid-run on the same port and dir.
 *
 * Redis configuration the claims hold under: AOF with `appendfsync always` (every acknowledged
 * write and every XACK is on disk before its reply), so a Redis SIGKILL loses nothing that was
 * acknowledged. With `everysec` Redis itself may lose about a second of writes: Redis's promise,
 * not ours, and not what this test checks.
 *
 * Invariants (the oracle, after the faults heal and the system is quiet):
 *   (1) every acknowledged write is in the handled ledger or the dead-letter stream (no loss);
 *   (2) every entry delivered to the group, not pending and not dead-lettered, is in the handled
 *       ledger (nothing acked without handling);
 *   (3) XPENDING is 0 and nothing is left undelivered;
 *   (4) duplicates are counted and printed (allowed here: at-least-once under SIGKILL).
 *
 * Bounded: about 30 s in all by default. `CHAOS_SECONDS=120` soaks longer; `CHAOS_SEED` replays a
 * run's random choices (the seed is printed).
 */
import * as path from 'node:path';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep } from '../support/wait-for';
import { prng, Supervisor } from './support/chaos-supervisor';
import {
  assertBuilt,
  ConsumerProcess,
  makeWorkDir,
  stopAllConsumerProcesses,
} from './support/consumer-fleet';
import {
  assertOracle,
  formatReport,
  oracleInput,
  OracleProducer,
  runOracle,
  waitForQuiet,
} from './support/oracle';

const CHAOS_SECONDS = Number(process.env.CHAOS_SECONDS ?? 15);
const SEED = Number(process.env.CHAOS_SEED ?? Date.now() % 2 ** 31);
const RATE_PER_SECOND = 200;
/** Entries per producer burst: consumers then read multi-entry batches a kill can split. */
const BURST = 10;
const KILL_EVERY_MS = 1500;
const CONSUMERS = 3;

let server: RedisServer;

beforeAll(async () => {
  assertBuilt();
  server = await RedisServer.start({ appendonly: true, appendfsync: 'always' });
});

afterAll(async () => {
  await stopAllConsumerProcesses();
  await stopAllRedisServers();
});

describe('S16 chaos: consumer processes and Redis killed at random under load', () => {
  it(
    `loses nothing, acks nothing unhandled and leaves nothing pending (${CHAOS_SECONDS} s of chaos)`,
    async () => {
      const random = prng(SEED);
      const stream = `chaos-${process.pid}`;
      const group = 'g';
      const ledger = path.join(makeWorkDir(), 'handled.ledger');
      const procs = Array.from(
        { length: CONSUMERS },
        (_, i) =>
          new ConsumerProcess({
            redisUrl: server.url,
            stream,
            group,
            name: `c${i}`,
            ledger,
            handleMs: 8,
            shutdownTimeoutMs: 2000,
            defaults: {
              blockMs: 500,
              minIdleMs: 1500,
              claimIntervalMs: 200,
              batchSize: 20,
              maxDeliveries: 10,
            },
          }),
      );
      await Promise.all(procs.map((p) => p.start()));
      const supervisor = new Supervisor(procs);

      // one reconnecting client; a write that fails while Redis is down is not retried under its id
      const producerRedis = server.client({ maxRetriesPerRequest: 1 });
      const producer = new OracleProducer(producerRedis, stream);
      const started = Date.now();
      producer.startSteady(CHAOS_SECONDS * RATE_PER_SECOND, RATE_PER_SECOND, { burst: BURST });

      let chaosOn = true;
      const consumerChaos = (async () => {
        while (chaosOn) {
          await sleep(KILL_EVERY_MS * (0.5 + random()));
          if (!chaosOn) break;
          await supervisor.killAndRestart(procs[Math.floor(random() * procs.length)]);
        }
      })();
      let redisDownMs = 0;
      const redisChaos = (async () => {
        await sleep(CHAOS_SECONDS * 1000 * (0.3 + 0.4 * random()));
        const down = Date.now();
        await server.kill('SIGKILL');
        await sleep(300);
        await server.restart(); // same port and dir: the AOF is reloaded
        redisDownMs = Date.now() - down;
      })();

      await producer.done();
      await redisChaos;
      chaosOn = false;
      await consumerChaos;
      const chaosMs = Date.now() - started;
      await supervisor.heal();

      const redis = server.client();
      const input = oracleInput(redis, producer, ledger, group);
      await waitForQuiet(input, { timeoutMs: 30_000 });
      await Promise.all(procs.map((p) => p.kill('SIGTERM')));
      const report = await runOracle(input);
      console.log(
        `S16 chaos (seed ${SEED}, ${chaosMs} ms, ${supervisor.kills} consumer kills, ` +
          `${supervisor.killedWhileStarting} during start, Redis down ${redisDownMs} ms, ` +
          `${producer.failed.size} writes failed while down): ${formatReport(report)}`,
      );
      assertOracle(report, { duplicatesAllowed: true });
      expect(report.acknowledged).toBeGreaterThan(CHAOS_SECONDS * RATE_PER_SECOND * 0.8);
      expect(supervisor.kills).toBeGreaterThanOrEqual(Math.floor(CHAOS_SECONDS / 3));
    },
    (CHAOS_SECONDS + 90) * 1000,
  );
});
