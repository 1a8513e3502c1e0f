/**
 * The effectively-once chaos run (docs/delivery.md "Duplicates and stale replays",
 * docs/publishing.md "Idempotent publish"), on the fault suite's oracle: two producer processes
 * publish with `idempotent: true` through a TCP proxy the test cuts at random (connections
 * destroyed, half of the time with writes and replies in flight: `written: 'unknown'`), each retrying every failed
 * publish under the same branded id until one answers; three consumer processes with `dedup: true`
 * are SIGKILLed and restarted at random. The handler records its effect in an append-only ledger
 * (one `H` line, written before it returns, so before its XACK).
 *
 * Per branded id it reports the entries in the stream and the handler completions, and asserts:
 *   - every id the producers were asked to publish was acknowledged to them, under one receipt;
 *   - every id is in the stream exactly once, at the entry id its receipt names (the retries
 *     after a lost reply wrote nothing new);
 *   - every id completed at least once; the oracle's checks hold (nothing lost, nothing acked
 *     without its effect, nothing pending or undelivered);
 *   - an id completed more than once only after a crash between its effect and its XACK: each
 *     completion but the last was made by a process SIGKILLed after that completion ended and
 *     before the next one started. These are counted and printed separately. (`dedup` skips an
 *     entry whose id the group ACKED; an entry whose ack died with its process was never acked,
 *     so it runs again: at least once is the floor, and the ledger shows exactly where.)
 *
 * Bounded: about 12 s of chaos, under a minute in all. `CHAOS_SECONDS=120` soaks longer (as the
 * other chaos run); `CHAOS_SEED` replays the random choices (the seed is printed).
 */
import * as path from 'node:path';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { TcpProxy } from '../support/tcp-proxy';
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
  readLedger,
  readStream,
  runOracle,
  waitForQuiet,
  type LedgerRecord,
  type OracleInput,
} from './support/oracle';
import { ProducerProcess } from './support/producer-fleet';

const CHAOS_SECONDS = Number(process.env.CHAOS_SECONDS ?? 12);
const SEED = Number(process.env.CHAOS_SEED ?? Date.now() % 2 ** 31);
/** Ids per second per producer process. */
const RATE = 60;
const KILL_EVERY_MS = 1500;
const CUT_EVERY_MS = 600;
const CONSUMERS = 3;

let server: RedisServer;
let proxy: TcpProxy;
const producers: ProducerProcess[] = [];

beforeAll(async () => {
  assertBuilt();
  server = await RedisServer.start();
  proxy = await TcpProxy.start(server.port);
});

afterAll(async () => {
  for (const p of producers) p.kill();
  await stopAllConsumerProcesses();
  await proxy?.stop();
  await stopAllRedisServers();
});

/** `{ n: count }` as `n:count` pairs, smallest first. */
function histogram(counts: Iterable<number>): string {
  const by = new Map<number, number>();
  for (const n of counts) by.set(n, (by.get(n) ?? 0) + 1);
  return [...by.entries()]
    .sort(([a], [b]) => a - b)
    .map(([n, ids]) => `${n}x: ${ids}`)
    .join(', ');
}

describe('effectively once: idempotent producers through cut connections, dedup consumers SIGKILLed', () => {
  it(
    `each id once in the stream, completed at least once, more only after a crash between effect and XACK (${CHAOS_SECONDS} s of chaos)`,
    async () => {
      const random = prng(SEED);
      const stream = `eo-chaos-${process.pid}`;
      const group = 'g';
      const ledger = path.join(makeWorkDir(), 'effects.ledger');
      const consumers = Array.from(
        { length: CONSUMERS },
        (_, i) =>
          new ConsumerProcess({
            redisUrl: server.url,
            stream,
            group,
            name: `c${i}`,
            ledger,
            handleMs: 5,
            shutdownTimeoutMs: 2000,
            defaults: {
              dedup: true,
              blockMs: 500,
              minIdleMs: 1500,
              claimIntervalMs: 200,
              batchSize: 20,
              maxDeliveries: 1000,
            },
          }),
      );
      await Promise.all(consumers.map((c) => c.start()));
      const supervisor = new Supervisor(consumers);

      const count = CHAOS_SECONDS * RATE;
      const via = `redis://127.0.0.1:${proxy.port}`;
      producers.push(
        new ProducerProcess({ redisUrl: via, stream, count, rate: RATE, batch: 1 }),
        new ProducerProcess({ redisUrl: via, stream, count, rate: RATE, batch: 5 }),
      );
      const started = Date.now();

      let chaosOn = true;
      let cuts = 0;
      let delayedCuts = 0;
      const producerChaos = (async () => {
        while (chaosOn) {
          await sleep(CUT_EVERY_MS * (0.5 + random()));
          if (!chaosOn) break;
          if (random() < 0.5) {
            // traffic held back 100 ms each way, then the connection dies under it: commands
            // the server ran whose replies never arrive (`written: 'unknown'`), and commands
            // that never reached it. A TCP link loses nothing without closing, so neither
            // does this proxy (a reply dropped on a live link would shift every later reply).
            proxy.setDelay(100);
            await sleep(250);
            delayedCuts++;
          }
          proxy.cutAll();
          proxy.setDelay(0);
          cuts++;
        }
      })();
      const consumerChaos = (async () => {
        while (chaosOn) {
          await sleep(KILL_EVERY_MS * (0.5 + random()));
          if (!chaosOn) break;
          await supervisor.killAndRestart(consumers[Math.floor(random() * consumers.length)]);
        }
      })();

      await Promise.all(producers.map((p) => p.done));
      chaosOn = false;
      await Promise.all([producerChaos, consumerChaos]);
      const chaosMs = Date.now() - started;
      await supervisor.heal();

      const redis = server.client();
      const acked = new Map<string, string>();
      for (const p of producers) for (const [id, ack] of p.acks) acked.set(id, ack.entryId);
      const input: OracleInput = { redis, stream, group, ledgers: [ledger], acked };
      await waitForQuiet(input, { timeoutMs: 30_000 });
      await Promise.all(consumers.map((c) => c.kill('SIGTERM')));
      const oracle = await runOracle(input);

      // per branded id: its entries in the stream, its completions in the ledger
      const entries = new Map<string, string[]>();
      for (const [entryId, fields] of await readStream(redis, stream)) {
        const id = fields[1];
        entries.set(id, [...(entries.get(id) ?? []), entryId]);
      }
      const completions = new Map<string, LedgerRecord[]>();
      for (const r of readLedger(ledger))
        completions.set(r.id, [...(completions.get(r.id) ?? []), r]);
      const explained: string[] = [];
      const unexplained: string[] = [];
      for (const [id, done] of completions) {
        if (done.length < 2) continue;
        done.sort((a, b) => a.endedAt - b.endedAt);
        for (let i = 0; i + 1 < done.length; i++) {
          const crash = supervisor.killed.find(
            (k) =>
              k.pid === done[i].pid && k.at >= done[i].endedAt && k.at <= done[i + 1].startedAt,
          );
          (crash ? explained : unexplained).push(
            `${id} by ${done[i].consumer}/pid ${done[i].pid} at ${done[i].endedAt}` +
              (crash ? `, killed ${crash.at - done[i].endedAt} ms later` : ''),
          );
        }
      }
      const asked = producers.reduce((n, p) => n + p.acks.size, 0);
      const retried = producers.reduce((n, p) => n + p.retriedIds.size, 0);
      const failures = { false: 0, unknown: 0, true: 0 };
      for (const p of producers) {
        for (const key of Object.keys(failures) as Array<keyof typeof failures>) {
          failures[key] += p.failures[key];
        }
      }
      // a retry that answered an entry written before that retry began: the lost-reply case
      let answeredEarlierWrite = 0;
      for (const p of producers) {
        for (const ack of p.acks.values()) {
          if (ack.attempts > 1 && Number(ack.entryId.split('-')[0]) < ack.lastAttemptAt) {
            answeredEarlierWrite++;
          }
        }
      }

      console.log(
        [
          `effectively-once chaos (seed ${SEED}, ${chaosMs} ms): ${producers.length} producers, ` +
            `${cuts} connection cuts (${delayedCuts} with replies in flight), ` +
            `${supervisor.kills} consumer SIGKILLs (${supervisor.killedWhileStarting} during start)`,
          `  publishes: ${asked} ids acknowledged, ${retried} needed retries; failed attempts ` +
            `written=false ${failures.false}, written=unknown ${failures.unknown}; ` +
            `${answeredEarlierWrite} retries answered the entry an earlier attempt wrote`,
          `  entries in the stream per id: ${histogram([...entries.values()].map((e) => e.length))}`,
          `  handler completions per id: ${histogram([...completions.values()].map((c) => c.length))}`,
          `  extra completions after a crash between effect and XACK: ${explained.length}` +
            (explained.length > 0
              ? ` (${explained.slice(0, 5).join('; ')}${explained.length > 5 ? '; ...' : ''})`
              : ''),
          `  extra completions without such a crash: ${unexplained.length}`,
          `  oracle: ${formatReport(oracle)}`,
        ].join('\n'),
      );

      expect(asked).toBe(2 * count);
      assertOracle(oracle, { duplicatesAllowed: true });
      expect(oracle.deadLettered).toBe(0);
      for (const p of producers) {
        for (const [id, ack] of p.acks) {
          expect([id, entries.get(id)]).toEqual([id, [ack.entryId]]);
        }
      }
      expect(entries.size).toBe(2 * count);
      expect(completions.size).toBe(2 * count);
      expect(unexplained).toEqual([]);
      expect(explained.length).toBe(oracle.duplicates);
      // the chaos did happen: connections cut, replies lost, consumers killed
      expect(cuts).toBeGreaterThanOrEqual(Math.floor(CHAOS_SECONDS / 2));
      expect(failures.unknown).toBeGreaterThan(0);
      expect(supervisor.kills).toBeGreaterThanOrEqual(Math.floor(CHAOS_SECONDS / 3));
    },
    (CHAOS_SECONDS + 90) * 1000,
  );
});
