/**
 * Redis itself goes away (issue 5 scenarios 5 and 6), with in-process loops on the package's own
 * connections (test/faults/support/in-process-loop.ts) and the oracle of ./support/oracle.ts.
 *
 * Redis configuration each claim holds under:
 * - "zero loss across a Redis SIGKILL": AOF with `appendfsync always` (every acknowledged XADD,
 *   every delivery and every XACK is on disk before its reply). With `everysec` Redis may lose
 *   about one second of writes on a crash: Redis's promise, not ours.
 * - without persistence a restart empties Redis: the stream and the group are gone (the entries
 *   with them). The claim there is recovery: the loop re-creates group and stream and goes on,
 *   backing off while Redis is down, never in a hot loop.
 */
import type { Redis } from 'ioredis';
import { Redis as IORedis } from 'ioredis';
import { RedisServer } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';
import {
  attempts,
  commandStats,
  infoNumber,
  ledgerFile,
  pendingCount,
  report,
  retryDelays,
  startLoop,
  stopLoopsAndServersAfterEach,
  streamNames,
} from './support/in-process-loop';
import {
  assertOracle,
  formatReport,
  oracleInput,
  OracleProducer,
  waitForQuiet,
} from './support/oracle';

const fresh = streamNames('restart');

stopLoopsAndServersAfterEach();

/** Writes `keys` filler keys in one MSET (one fsync) so that a restart has something to load. */
async function fill(redis: Redis, keys: number): Promise<void> {
  const args: string[] = [];
  for (let i = 0; i < keys; i++) args.push(`filler:${i}`, `value-${i}`);
  await redis.mset(...args);
}

/**
 * PINGs the server every 10 ms on a client without ready check (so LOADING replies reach it)
 * until `stop()`; reports what it saw.
 */
function watchLoading(port: number): { stop(): Promise<{ loading: number; pong: number }> } {
  const probe = new IORedis({
    host: '127.0.0.1',
    port,
    enableReadyCheck: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => 10,
    lazyConnect: false,
  });
  probe.on('error', () => undefined);
  let loading = 0;
  let pong = 0;
  let running = true;
  const done = (async () => {
    while (running) {
      try {
        if ((await probe.ping()) === 'PONG') pong++;
      } catch (err) {
        if (/^LOADING/.test((err as Error).message)) loading++;
      }
      await sleep(10);
    }
  })();
  return {
    async stop() {
      running = false;
      await done;
      probe.disconnect();
      return { loading, pong };
    },
  };
}

describe('Redis SIGKILL + restart with AOF appendfsync always (scenario 5)', () => {
  it('resumes on the same port and dir, rides out LOADING, loses no acknowledged write', async () => {
    // Invariant (AOF always): every XADD that returned before or after the crash is handled
    // (or dead-lettered: none here), nothing is acked without a ledger record, XPENDING is 0,
    // the group holds no undelivered entry; the loop is running again. Duplicates are reported.
    const server = await RedisServer.start({
      appendonly: true,
      appendfsync: 'always',
      // a largish dataset that loads slowly (100 µs per key) and answers LOADING meanwhile
      extraArgs: ['--key-load-delay', '100', '--loading-process-events-interval-bytes', '1024'],
    });
    const redis = server.client();
    await fill(redis, 10_000);
    await redis.bgrewriteaof(); // the RDB preamble is what key-load-delay slows down
    await waitFor(
      async () =>
        (await infoNumber(redis, 'persistence', 'aof_rewrite_in_progress')) === 0 &&
        (await infoNumber(redis, 'persistence', 'aof_rewrite_scheduled')) === 0,
      { message: 'AOF rewrite done' },
    );
    const stream = fresh('aof');
    const ledger = ledgerFile(stream);
    const loop = startLoop({
      url: server.url,
      stream,
      group: 'g',
      consumer: 'stable',
      ledger,
      options: { blockMs: 500, minIdleMs: 2000, claimIntervalMs: 500 },
    });
    const producer = new OracleProducer(server.client({ maxRetriesPerRequest: 0 }), stream);
    producer.startSteady(600, 200, 20);
    await waitFor(() => loop.handled.length >= 150, { message: 'steady flow before the crash' });

    await server.kill('SIGKILL');
    const killedAt = Date.now();
    await sleep(300);
    const probe = watchLoading(server.port);
    await server.restart(); // resolves once PING answers PONG (loading done)
    const upAt = Date.now();
    const seen = await probe.stop();
    await producer.done();

    const result = await waitForQuiet(oracleInput(redis, producer, ledger), { timeoutMs: 15_000 });
    assertOracle(result, { duplicatesAllowed: true });
    expect(await pendingCount(redis, stream, 'g')).toBe(0);
    expect(await redis.dbsize()).toBeGreaterThanOrEqual(10_000); // the AOF really came back
    expect(seen.loading).toBeGreaterThan(0); // LOADING was visible to clients
    expect(loop.consumer.snapshot().state).toBe('running');
    report(
      'AOF always restart',
      `down ${upAt - killedAt} ms (LOADING answered ${seen.loading}x); ${producer.failed.size} XADDs ` +
        `failed while down; ${formatReport(result)}; loop errors ${retryDelays(loop.logger).length}`,
    );
  });
});

describe('Redis restart without persistence (scenario 6)', () => {
  it('while Redis is down the loop backs off (100, 200, 400 ms ...), then re-creates group and stream (NOGROUP) and goes on', async () => {
    // Invariants: (a) no hot loop while Redis is down: over 3 s the loop makes at most a handful
    // of attempts, spaced by a doubling backoff, and its connection a bounded number of reconnects;
    // (b) after the restart (empty server) the NOGROUP is recovered by re-creating the group with
    // MKSTREAM; entries published afterwards are handled, XPENDING 0; (c) once recovered the idle
    // loop sends about one read per blockMs plus its sweep (INFO commandstats).
    const server = await RedisServer.start();
    const stream = fresh('down');
    const blockMs = 500;
    const claimIntervalMs = 1000;
    const loop = startLoop({
      url: server.url,
      stream,
      group: 'g',
      options: { blockMs, minIdleMs: 2000, claimIntervalMs },
    });
    let redis = server.client();
    await redis.xadd(stream, '*', 'id', 'before', 'data', '{}');
    await waitFor(() => loop.handled.some((h) => h.id === 'before'));

    await server.kill('SIGKILL');
    const downAt = Date.now();
    const downMs = 3000;
    await sleep(downMs);
    const callsDown = loop.calls.filter((c) => c.at >= downAt && c.at < downAt + downMs);
    const reconnectsDown = loop.reconnects.filter((t) => t >= downAt && t < downAt + downMs);
    const delays = retryDelays(loop.logger);
    expect(loop.consumer.snapshot().state).toBe('degraded');
    // doubling from 100 ms: 100 + 200 + 400 + 800 + 1600 > 3000, so at most 5-6 tries
    expect(delays.slice(0, 4)).toEqual([100, 200, 400, 800]);
    expect(callsDown.length).toBeLessThanOrEqual(8);
    expect(reconnectsDown.length).toBeLessThanOrEqual(15);

    await server.restart();
    const upAt = Date.now();
    redis = server.client();
    await waitFor(() => loop.logger.has(/group or stream is gone \(NOGROUP/), {
      timeoutMs: 10_000,
      message: 'NOGROUP seen after the restart',
    });
    await waitFor(async () => (await redis.exists(stream)) === 1, {
      message: 'stream re-created by XGROUP CREATE ... MKSTREAM',
    });
    const recoveredMs = Date.now() - upAt;
    await redis.xadd(stream, '*', 'id', 'after', 'data', '{}');
    await waitFor(() => loop.handled.some((h) => h.id === 'after'), { timeoutMs: 5000 });
    // acked with the next read, a moment after its handler returned
    await waitFor(async () => (await pendingCount(redis, stream, 'g')) === 0, {
      message: "'after' acked",
    });
    expect(loop.consumer.snapshot().state).toBe('running');

    // recovered and idle: ~one XREADGROUP per blockMs (a due sweep cuts one short), one sweep per
    // claimIntervalMs; no re-create
    await redis.config('RESETSTAT');
    const windowMs = 2000;
    await sleep(windowMs);
    const stats = await commandStats(redis);
    const reads = attempts(stats, 'xreadgroup');
    expect(reads).toBeLessThanOrEqual(windowMs / blockMs + windowMs / claimIntervalMs + 1);
    expect(attempts(stats, 'xautoclaim')).toBeLessThanOrEqual(windowMs / claimIntervalMs + 1);
    expect(attempts(stats, 'xpending')).toBeLessThanOrEqual(windowMs / claimIntervalMs + 1);
    expect(attempts(stats, 'xgroup|create')).toBe(0);
    report(
      'restart without persistence',
      `while down ${downMs} ms: ${callsDown.length} loop calls, ${reconnectsDown.length} reconnects, ` +
        `backoff ${delays.join(', ')} ms; NOGROUP recovered ${recoveredMs} ms after the restart; ` +
        `idle after: ${reads} XREADGROUP in ${windowMs} ms`,
    );
  });

  it('a group destroyed over and over while Redis is up: one re-create per NOGROUP, no hot loop, nothing lost', async () => {
    // Invariant: each XGROUP DESTROY costs one XGROUP CREATE (never a burst), entries published
    // meanwhile are all handled (a group re-created at '0' re-delivers: duplicates, never a loss),
    // and XPENDING is 0 once the destroyer stops.
    const server = await RedisServer.start();
    const redis = server.client();
    const stream = fresh('destroyed');
    const ledger = ledgerFile(stream);
    const loop = startLoop({
      url: server.url,
      stream,
      group: 'g',
      ledger,
      options: { blockMs: 300, minIdleMs: 2000, claimIntervalMs: 500 },
    });
    await waitFor(() => loop.consumer.snapshot().state === 'running');
    await redis.config('RESETSTAT');
    const producer = new OracleProducer(server.client(), stream);
    producer.startSteady(100, 50);
    let destroys = 0;
    const until = Date.now() + 2000;
    while (Date.now() < until) {
      destroys += Number(await redis.xgroup('DESTROY', stream, 'g'));
      await sleep(100);
    }
    const stats = await commandStats(redis);
    await producer.done();
    const result = await waitForQuiet(oracleInput(redis, producer, ledger), { timeoutMs: 10_000 });
    assertOracle(result, { duplicatesAllowed: true });
    const creates = attempts(stats, 'xgroup|create');
    expect(destroys).toBeGreaterThan(5);
    expect(creates).toBeLessThanOrEqual(destroys + 1);
    expect(attempts(stats, 'xreadgroup')).toBeLessThanOrEqual(6 * (destroys + 1) + 2000 / 300);
    report(
      'group destroyed repeatedly',
      `${destroys} destroys -> ${creates} XGROUP CREATE, ${attempts(stats, 'xreadgroup')} XREADGROUP ` +
        `in 2 s; ${formatReport(result)}`,
    );
  });
});
