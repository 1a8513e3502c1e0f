/**
 * Authentication and ACL faults (issue 5 scenario 15): a wrong password, an ACL user lacking a
 * command the loop needs (NOPERM), and the minimal ACL a consumer app needs, checked against the
 * server's ACL LOG.
 *
 * The minimal ACL of a consumer app (keys: each consumed stream and its dead-letter stream):
 *   required:    +xgroup|create +xreadgroup +xack +xpending +xautoclaim +xclaim +xrange
 *                +xadd (the dead-letter copy; not needed with deadLetterStream: false)
 *   recommended: +info (ioredis's ready check; without it ioredis prints a warning per connection)
 *                +client|id +client|unblock (shutdown wakes a parked read; without them it drops
 *                the connection instead, still at once)
 *                +config|get (the eviction-policy warning at start; skipped silently without it)
 *                +client|setname (connection names in CLIENT LIST; ignored without it)
 *                +xinfo|groups (tells an existing group from a missing one when Redis answers
 *                XGROUP CREATE with OOM at maxmemory)
 *                +command|docs +command|info (the newer server verbs, asked once per connection;
 *                without them the Redis 7 path, said in the line at start)
 * The producer needs +xadd, the admin (redrive) +xrange +xadd +xdel, the stats +xinfo +xlen
 * +xpending on top.
 */
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { ConsumerStats, StreamHandler } from '../../lib';
import type { StreamHandlerOptions } from '../../lib/interfaces/stream-handler-options.interface';
import { RedisServer } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';
import {
  RECOMMENDED_CONSUMER_ACL,
  REQUIRED_CONSUMER_ACL,
  REQUIRED_CONSUMER_ACL_BEFORE_PAUSE,
  runAclScenario,
} from './support/acl-scenario';
import {
  commandStats,
  infoNumber,
  pendingCount,
  report,
  retryDelays,
  startLoop,
  stopLoopsAndServersAfterEach,
  streamNames,
  type InProcessLoop,
} from './support/in-process-loop';
import { CaptureLogger, createEchoStreamApp } from './support/nest-app';

const fresh = streamNames('acl');

/**
 * Who NOPERM says lacks the permission: Redis 7.0 `NOPERM this user`, Redis 8.0 and Valkey 8/9
 * `NOPERM User <name>` (the text only: the reply is recognised by its NOPERM prefix).
 */
const NOPERM_BY = 'NOPERM (?:this user|User \\S+)';

stopLoopsAndServersAfterEach();

async function userWith(admin: Redis, user: string, rules: string[]): Promise<void> {
  await admin.acl(
    'SETUSER',
    user,
    'reset',
    'on',
    '>pw',
    '~acl-orders*',
    '~{acl-orders*',
    'resetchannels',
    '-@all',
    ...rules,
  );
}

describe('wrong password (scenario 15)', () => {
  const STREAM = `acl-wrongpass-${process.pid}`;

  @Injectable()
  class WrongPassHandler {
    @StreamHandler(STREAM, 'g', { blockMs: 200 })
    handle(): void {}
  }

  @Module({ providers: [WrongPassHandler] })
  class WrongPassModule {}

  it('a clear WRONGPASS error at start, the loop degraded, a growing backoff, no hot loop; the app still closes at once', async () => {
    // Invariant: with a wrong password the app boots (loops start and degrade, they never die),
    // each loop logs the server's WRONGPASS with its stream/group, retries on a doubling backoff,
    // and the server sees a bounded number of AUTH attempts (no hot loop); app.close() is prompt.
    const server = await RedisServer.start({ password: 'right-pw' });
    const admin = server.client();
    const logs = new CaptureLogger();
    const app = await createEchoStreamApp(
      {
        connection: `redis://:wrong-pw@127.0.0.1:${server.port}`,
        consumerName: 'wrong-pass',
        shutdownTimeoutMs: 1000,
      },
      WrongPassModule,
      logs,
    );
    // RESP3 (ioredis 6's default) authenticates inside HELLO 3 AUTH; RESP2 with AUTH
    const authFailures = async () => {
      const stats = await commandStats(admin);
      return (stats.get('auth')?.failed ?? 0) + (stats.get('hello')?.failed ?? 0);
    };
    const deniedBefore = await authFailures();
    const connectionsBefore = await infoNumber(admin, 'stats', 'total_connections_received');
    const windowMs = 3000;
    let closeMs = -1;
    let denied: number;
    let connections: number;
    let stats: ReturnType<ConsumerStats['get']>;
    try {
      await app.init();
      await sleep(windowMs);
      denied = (await authFailures()) - deniedBefore;
      connections =
        (await infoNumber(admin, 'stats', 'total_connections_received')) - connectionsBefore;
      stats = app.get(ConsumerStats).get(STREAM, 'g');
    } finally {
      const closeAt = Date.now();
      await app.close();
      closeMs = Date.now() - closeAt;
    }
    const loopErrors = logs.matching(new RegExp(`^error ${STREAM}/g: .*WRONGPASS`));
    const delays = loopErrors.map((l) => Number(/retrying in (\d+) ms/.exec(l)?.[1]));

    expect(stats).toMatchObject({
      state: 'degraded',
      lastError: expect.stringMatching(
        new RegExp(
          `^cannot connect to Redis at 127\\.0\\.0\\.1:${server.port} \\(never connected\\): ` +
            `authentication failed \\(WRONGPASS`,
        ),
      ),
    });
    expect(loopErrors[0]).toMatch(
      new RegExp(
        `WrongPassHandler.handle on ${STREAM}/g: Redis error \\(cannot connect to Redis at ` +
          `127\\.0\\.0\\.1:${server.port} \\(never connected\\): authentication failed ` +
          `\\(WRONGPASS invalid username-password pair`,
      ),
    );
    expect(delays.slice(0, 4)).toEqual([100, 200, 400, 800]);
    expect(loopErrors.length).toBeLessThanOrEqual(7);
    // three connections (the shared read, the loops' commands and the app's shared one), each
    // reconnecting 50, 100, 150 ... ms apart
    expect(denied).toBeGreaterThan(0);
    expect(denied).toBeLessThanOrEqual(45);
    // one line says why, however many connections fail; never the password
    expect(
      logs.matching(
        /^warn EchoStreamConnections: Cannot connect to Redis at .*authentication failed \(WRONGPASS/,
      ),
    ).toHaveLength(1);
    expect(logs.has(/wrong-pw/)).toBe(false);
    expect(closeMs).toBeLessThan(1500);
    report(
      'wrong password',
      `${windowMs} ms: ${denied} AUTH denied on ${connections} connections, ${loopErrors.length} loop ` +
        `errors (backoff ${delays.join(', ')} ms); close ${closeMs} ms`,
    );
  });
});

describe('an ACL user lacking a command (scenario 15)', () => {
  /** A fresh server and a loop on it logged in as `user`, who may run every command but `command`. */
  async function loopWithout(
    command: string,
    user: string,
    options: Partial<StreamHandlerOptions>,
    before?: (admin: Redis, stream: string) => Promise<void>,
  ): Promise<{ admin: Redis; stream: string; loop: InProcessLoop }> {
    const server = await RedisServer.start();
    const admin = server.client();
    const stream = fresh(`no-${command}`);
    await before?.(admin, stream);
    await admin.acl('SETUSER', user, 'on', '>pw', '~*', '&*', '+@all', `-${command}`);
    const loop = startLoop({
      url: `redis://${user}:pw@127.0.0.1:${server.port}`,
      stream,
      group: 'g',
      options,
    });
    return { admin, stream, loop };
  }

  it('without XAUTOCLAIM: NOPERM logged with stream/group, degraded, doubling backoff; once granted the loop recovers', async () => {
    // Invariant: a command the ACL refuses is an error like any other: logged with context, the
    // loop degraded and backing off (a bounded number of refused XAUTOCLAIMs), never dead; when
    // the ACL is fixed the loop recovers on its own and handles what waited; XPENDING 0.
    // a crashed peer's entry, idle long past minIdleMs: the very first sweep wants to reclaim it
    const crashedPeer = async (admin: Redis, stream: string): Promise<void> => {
      await admin.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
      const id = String(await admin.xadd(stream, '*', 'id', 'waiting', 'data', '{}'));
      await admin.xreadgroup('GROUP', 'g', 'crashed-peer', 'COUNT', 10, 'STREAMS', stream, '>');
      await admin.xclaim(stream, 'g', 'crashed-peer', 0, id, 'IDLE', 600_000, 'JUSTID');
    };
    const { admin, stream, loop } = await loopWithout(
      'xautoclaim',
      'limited',
      { blockMs: 200, minIdleMs: 1000, claimIntervalMs: 500 },
      crashedPeer,
    );
    await admin.config('RESETSTAT');
    const windowMs = 2000;
    await sleep(windowMs);
    const refused = (await commandStats(admin)).get('xautoclaim')?.rejected ?? 0;
    const delays = retryDelays(loop.logger);
    expect(loop.consumer.snapshot()).toMatchObject({
      state: 'degraded',
      lastError: expect.stringMatching(/^NOPERM .*'xautoclaim'/),
    });
    expect(loop.logger.lines).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^error Fault.handle on ${stream}/g: Redis error \\(${NOPERM_BY} has no permissions to run the 'xautoclaim' command\\); retrying in 100 ms`,
        ),
      ),
    );
    expect(delays.slice(0, 4)).toEqual([100, 200, 400, 800]);
    expect(refused).toBeGreaterThan(0);
    expect(refused).toBeLessThanOrEqual(6);
    expect(loop.handled).toEqual([]); // the sweep runs before the read: nothing is read meanwhile

    await admin.acl('SETUSER', 'limited', '+xautoclaim');
    await waitFor(() => loop.handled.some((h) => h.id === 'waiting'), {
      timeoutMs: 5000,
      message: 'recovered once the ACL allows XAUTOCLAIM',
    });
    await waitFor(async () => (await pendingCount(admin, stream, 'g')) === 0);
    // the reclaim handled it inside the sweep; the read that follows proves the loop healthy
    await waitFor(() => loop.logger.has(/recovered after \d+ failed attempts/), {
      timeoutMs: 2000,
      message: 'recovered once the read after the sweep went through',
    });
    expect(loop.consumer.snapshot().state).toBe('running');
    report(
      'NOPERM xautoclaim',
      `${refused} XAUTOCLAIM refused in ${windowMs} ms; backoff ${delays.join(', ')} ms`,
    );
  });

  it('without XACK: handled once each, the acks back off (not every 100 ms), nothing is handed on twice; once granted all is acked', async () => {
    // Invariant: acks the ACL refuses are kept and retried on a doubling backoff; the entries are
    // not handled again meanwhile; once XACK is allowed they are acked: XPENDING 0, each handled
    // exactly once.
    const { admin, stream, loop } = await loopWithout('xack', 'noack', {
      blockMs: 200,
      minIdleMs: 60_000,
      claimIntervalMs: 60_000,
    });
    await waitFor(() => loop.consumer.snapshot().state === 'running');
    for (let i = 0; i < 5; i++) await admin.xadd(stream, '*', 'id', `e${i}`, 'data', '{}');
    await waitFor(() => loop.handled.length === 5);
    await admin.config('RESETSTAT');
    await sleep(1600);
    const refused = (await commandStats(admin)).get('xack')?.rejected ?? 0;
    const delays = retryDelays(loop.logger);
    expect(await pendingCount(admin, stream, 'g')).toBe(5);
    expect(loop.handled).toHaveLength(5);
    expect(delays.slice(0, 3)).toEqual([100, 200, 400]);
    expect(refused).toBeLessThanOrEqual(5);
    expect(
      loop.logger.has(new RegExp(`${NOPERM_BY} has no permissions to run the 'xack' command`)),
    ).toBe(true);

    await admin.acl('SETUSER', 'noack', '+xack');
    await waitFor(async () => (await pendingCount(admin, stream, 'g')) === 0, { timeoutMs: 5000 });
    expect(loop.handled.map((h) => h.id)).toEqual(['e0', 'e1', 'e2', 'e3', 'e4']);
    await waitFor(() => loop.consumer.snapshot().state === 'running');
    report('NOPERM xack', `${refused} XACK refused in 1600 ms; backoff ${delays.join(', ')} ms`);
  });
});

describe('the minimal ACL of a consumer app (scenario 15)', () => {
  // CLIENT SETINFO (sent by ioredis, known to Redis >= 7.2 only) is swallowed like CLIENT SETNAME
  const notSetinfo = (denied: string) => denied !== 'command:client|setinfo';

  it('required + recommended rules: reads, acks, reclaim, heartbeat, dead letters, deleted poison pills and shutdown run clean; nothing denied', async () => {
    // Invariant: with exactly these rules every stage completes (handled, reclaimed,
    // dead-lettered, nothing pending), the app logs no problem, ioredis prints nothing, the ACL
    // LOG holds no denial, and shutdown wakes the parked read at once.
    const server = await RedisServer.start();
    const admin = server.client();
    await userWith(admin, 'consumer', [...REQUIRED_CONSUMER_ACL, ...RECOMMENDED_CONSUMER_ACL]);
    const run = await runAclScenario(server, admin, 'consumer', 'pw');
    expect(run.failedStage).toBeUndefined();
    expect(run.stages).toEqual(['handled', 'reclaimed', 'dead-lettered', 'nothing pending']);
    expect(
      run.problems.filter(
        (p) => !/deleted from the stream|Dead-lettered \(max_deliveries\)/.test(p),
      ),
    ).toEqual([]);
    expect(run.consoleWarnings).toEqual([]);
    expect(run.denied.filter(notSetinfo)).toEqual([]);
    expect(run.closeMs).toBeLessThan(1000);
    report(
      'minimal ACL',
      `required ${REQUIRED_CONSUMER_ACL.join(' ')}; recommended ${RECOMMENDED_CONSUMER_ACL.join(' ')}: ` +
        `clean, close ${run.closeMs} ms`,
    );
  });

  it('the required rules alone still run everything: shutdown drops the parked read instead of CLIENT UNBLOCK, ioredis warns per connection', async () => {
    // Invariant: the recommended rules are conveniences: without them every stage still
    // completes, the app logs no problem but the unchecked claims' warning, and shutdown is still
    // prompt; the only denials are the recommended commands, and ioredis prints only its
    // ready-check warning.
    const server = await RedisServer.start();
    const admin = server.client();
    await userWith(admin, 'consumer', REQUIRED_CONSUMER_ACL);
    const run = await runAclScenario(server, admin, 'consumer', 'pw');
    expect(run.stages).toEqual(['handled', 'reclaimed', 'dead-lettered', 'nothing pending']);
    // the one fallback that is said: claims of held entries without the owner check
    const problems = run.problems.filter(
      (p) => !/deleted from the stream|Dead-lettered \(max_deliveries\)/.test(p),
    );
    expect(problems.length).toBeGreaterThan(0);
    expect(problems.filter((p) => !/are not owner-checked: the server refused/.test(p))).toEqual(
      [],
    );
    expect(run.closeMs).toBeLessThan(1000);
    const recommended = RECOMMENDED_CONSUMER_ACL.map((rule) => `command:${rule.slice(1)}`);
    expect(run.denied.filter(notSetinfo).filter((d) => !recommended.includes(d))).toEqual([]);
    expect(run.denied).toEqual(
      expect.arrayContaining(['command:info', 'command:client|id', 'command:config|get']),
    );
    expect(run.consoleWarnings.length).toBeGreaterThan(0);
    expect(run.consoleWarnings.every((w) => /Skipping the ready check/.test(w))).toBe(true);
    report(
      'required ACL only',
      `close ${run.closeMs} ms; denied (handled) ${run.denied.join(' ')}`,
    );
  });

  it('an ACL from before pause and checkpoints (no MGET, HMGET, HDEL): everything still runs, pauses are ignored with one warning', async () => {
    // Invariant: an upgrade under an older ACL must not stop a loop: the refused pause read means
    // "not paused" (said once per group), a refused checkpoint read means "no checkpoint" (said
    // once per loop), a refused HDEL along an ack leaves the ack itself alone.
    const server = await RedisServer.start();
    const admin = server.client();
    await userWith(admin, 'consumer', [
      ...REQUIRED_CONSUMER_ACL_BEFORE_PAUSE,
      ...RECOMMENDED_CONSUMER_ACL,
    ]);
    const run = await runAclScenario(server, admin, 'consumer', 'pw');
    expect(run.failedStage).toBeUndefined();
    expect(run.stages).toEqual(['handled', 'reclaimed', 'dead-lettered', 'nothing pending']);
    const problems = run.problems.filter(
      (p) => !/deleted from the stream|Dead-lettered \(max_deliveries\)/.test(p),
    );
    expect(problems.filter((p) => /Pause flags of group .* cannot be read/.test(p))).toHaveLength(
      1,
    );
    expect(problems.every((p) => /Pause flags of group|checkpoints cannot be read/.test(p))).toBe(
      true,
    );
    expect(run.denied.filter(notSetinfo).every((d) => /^command:(mget|hmget|hdel)$/.test(d))).toBe(
      true,
    );
    expect(run.denied).toContain('command:mget');
    report('ACL before pause', `denied (handled) ${[...new Set(run.denied)].join(' ')}`);
  });
});
