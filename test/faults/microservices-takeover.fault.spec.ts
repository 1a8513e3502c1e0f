/**
 * The Nest microservices transport (lib/microservices/) under a crash: two microservice processes
 * of one group (`microservice-process.mjs`: the BUILT `nestjs-echo-stream/microservices` under
 * `NestFactory.createMicroservice`, one slow `@EventPattern` handler) share 300 events; one is
 * SIGKILLed while it has entries in hand (some of its events recorded, entries owned by its
 * consumer in XPENDING). The other takes them over after `minIdleMs`. Oracle: every event handled
 * at least once, nothing acked unhandled, the group's PEL empty; the only duplicates are entries
 * the killed process had in hand and recorded (what it held: at most the batch being handled and
 * the one read ahead, 2 x batchSize). `serial` project: the takeover waits on `minIdleMs` and
 * `claimIntervalMs` timers.
 */
import * as path from 'node:path';
import type { Redis } from 'ioredis';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { waitFor } from '../support/wait-for';
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
  readLedger,
  waitForQuiet,
} from './support/oracle';

/** The child script, relative to the repository root (jest runs there). */
const MICROSERVICE_SCRIPT = path.join('test', 'faults', 'support', 'microservice-process.mjs');
const EVENTS = 300;
const HANDLE_MS = 30;
const BATCH = 10;
/** The takeover's timers: a dead consumer's entries go to a peer once idle `minIdleMs`. */
const TIMERS = { blockMs: 200, minIdleMs: 1000, claimIntervalMs: 200 };

let server: RedisServer;
let redis: Redis;
let workDir: string;

beforeAll(async () => {
  assertBuilt();
  server = await RedisServer.start();
  redis = server.client();
  workDir = makeWorkDir();
});

afterAll(async () => {
  redis?.disconnect();
  await stopAllConsumerProcesses();
  await stopAllRedisServers();
});

/** Entry ids of the group's PEL owned by `consumer`. */
async function ownedBy(stream: string, group: string, consumer: string): Promise<string[]> {
  const rows = (await redis.xpending(stream, group, '-', '+', 10_000, consumer)) as Array<
    [string, string, number, number]
  >;
  return rows.map(([entryId]) => entryId);
}

it('a microservice SIGKILLed with events in hand: its peer takes them over after minIdleMs, every event handled, duplicates only among the entries it held', async () => {
  const stream = `ms-takeover-${process.pid}`;
  const group = 'billing';
  const ledger = path.join(workDir, `${stream}.ledger`);
  const producer = new OracleProducer(redis, stream);
  const microservice = (name: string): ConsumerProcess =>
    new ConsumerProcess({
      redisUrl: server.url,
      stream,
      group,
      name,
      ledger,
      handleMs: HANDLE_MS,
      defaults: { ...TIMERS, batchSize: BATCH },
      script: MICROSERVICE_SCRIPT,
    });
  const a = microservice('a');
  const b = microservice('b');
  await Promise.all([a.start(), b.start()]);

  const ids = await producer.publishMany(EVENTS);
  expect(ids).toHaveLength(EVENTS);

  // a has handled some, not all, and holds entries now: a handler call open, entries in its PEL
  await waitFor(
    async () =>
      a.seen('DONE').length >= 20 &&
      a.inHand() > 0 &&
      (await ownedBy(stream, group, 'a')).length > 0,
    { timeoutMs: 10_000, intervalMs: 5, message: 'a mid-batch with entries in hand' },
  );
  const killedAt = Date.now();
  await a.kill('SIGKILL');
  expect(a.lastExit).toBe('SIGKILL');
  // a dead consumer acks nothing more: this is what it had in hand
  const inHand = new Set(await ownedBy(stream, group, 'a'));
  const recordedByA = readLedger(ledger).filter((r) => r.consumer === 'a');
  expect(recordedByA.length).toBeGreaterThan(0);
  expect(recordedByA.length).toBeLessThan(EVENTS);
  expect(inHand.size).toBeGreaterThan(0);
  // the batch being handled and the one read ahead of it (docs/delivery.md, read-ahead)
  expect(inHand.size).toBeLessThanOrEqual(2 * BATCH);

  const report = await waitForQuiet(oracleInput(redis, producer, ledger, group), {
    timeoutMs: 20_000,
    message: `b took over a's ${inHand.size} entries and handled every event`,
  });
  assertOracle(report, { duplicatesAllowed: true });
  expect(report.acknowledged).toBe(EVENTS);
  expect(report.handled).toBe(EVENTS);
  expect(report.pending).toBe(0);

  // the duplicates: entries a recorded but never acked, so they were in hand at the kill. With a
  // read ahead, the XACK of a batch goes out after the read that follows it, so a batch handled
  // whole can still be unacked while the next one runs: up to the two batches a held.
  const records = readLedger(ledger);
  const times = new Map<string, number>();
  for (const r of records) times.set(r.entryId, (times.get(r.entryId) ?? 0) + 1);
  const duplicated = [...times].filter(([, n]) => n > 1).map(([entryId]) => entryId);
  for (const entryId of duplicated) expect(inHand).toContain(entryId);
  expect(duplicated.length).toBeLessThanOrEqual(inHand.size);
  expect(report.duplicates).toBe(duplicated.length);
  // every entry a held went to b as a redelivery, once a's claim had gone idle
  for (const entryId of inHand) {
    const taken = records.find((r) => r.entryId === entryId && r.consumer === 'b');
    expect(taken?.attempts).toBeGreaterThanOrEqual(2);
    expect(taken!.startedAt).toBeGreaterThanOrEqual(killedAt);
  }
  const firstTakeover = Math.min(
    ...records.filter((r) => inHand.has(r.entryId) && r.consumer === 'b').map((r) => r.startedAt),
  );
  console.log(
    `microservices takeover: ${formatReport(report)}; a recorded ${recordedByA.length}, ` +
      `had ${inHand.size} in hand (${duplicated.length} of them recorded: the duplicates); ` +
      `b took over ${firstTakeover - killedAt} ms after the kill`,
  );
});
