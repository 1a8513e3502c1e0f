/**
 * The loop's link to Redis fails while it is parked on XREADGROUP ... BLOCK or while its XACK is on
 * the wire (issue 5 scenarios 7 and 8). In-process loops (test/faults/support/in-process-loop.ts)
 * on the package's own connections; a TcpProxy sits on the loop's link alone (the control
 * connection and the test's clients talk to the server directly).
 *
 * Redis configuration: a plain server without persistence (these faults are the network's).
 */
import type { Redis } from 'ioredis';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { TcpProxy } from '../support/tcp-proxy';
import { sleep, waitFor } from '../support/wait-for';
import {
  clientList,
  commandStats,
  ledgerFile,
  parkedRead,
  pendingCount,
  removeLedgerDirs,
  publishAndHandle,
  report,
  startLoop,
  stopAllLoops,
  streamNames,
  waitForFreshPark,
  type InProcessLoop,
  type InProcessLoopOptions,
} from './support/in-process-loop';
import {
  assertOracle,
  formatReport,
  oracleInput,
  OracleProducer,
  waitForQuiet,
} from './support/oracle';

let server: RedisServer;
let redis: Redis;
const proxies: TcpProxy[] = [];
const fresh = streamNames('conn');

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterEach(async () => {
  await stopAllLoops();
  await Promise.all(proxies.splice(0).map((p) => p.stop()));
});
afterAll(async () => {
  await stopAllRedisServers();
  removeLedgerDirs();
});

/**
 * A loop on a fresh stream (group `g`, with a ledger) whose own link goes through a new TcpProxy
 * (stopped after the test); its control connection talks to the server directly.
 */
async function loopBehindProxy(
  what: string,
  opts: Pick<InProcessLoopOptions, 'consumer' | 'options' | 'handle' | 'deadlineMs'>,
): Promise<{ stream: string; ledger: string; proxy: TcpProxy; loop: InProcessLoop }> {
  const stream = fresh(what);
  const ledger = ledgerFile(stream);
  const proxy = await TcpProxy.start(server.port);
  proxies.push(proxy);
  const loop = startLoop({
    url: `redis://127.0.0.1:${proxy.port}`,
    controlUrl: server.url,
    stream,
    group: 'g',
    ledger,
    ...opts,
  });
  return { stream, ledger, proxy, loop };
}

/** The watchdog deadline of a parked read (lib/redis/loop/parked-reads.ts: blockMs + max(1000, blockMs)). */
const watchdogMs = (blockMs: number) => blockMs + Math.max(1000, blockMs);

/** The CLIENT LIST id of the loop's connection parked in XREADGROUP on the server. */
async function parkedLoopClientId(): Promise<string> {
  return (await waitFor(
    async () => {
      const rows = (await clientList(redis)).filter(
        (c) => c.name === 'echo-stream-loop' && c.cmd === 'xreadgroup' && c.flags.includes('b'),
      );
      return rows.length === 1 ? rows[0].id : undefined;
    },
    { timeoutMs: 5000, message: 'exactly one parked echo-stream-loop client' },
  )) as string;
}

describe('connection cut while parked (scenario 7)', () => {
  const blockMs = 1000;
  const quiet = { blockMs, minIdleMs: 60_000, claimIntervalMs: 60_000 };

  async function cutAndResume(
    name: string,
    loop: InProcessLoop,
    stream: string,
    ledger: string,
    cut: () => Promise<void>,
  ): Promise<void> {
    const producer = await publishAndHandle(redis, stream, loop, 5, 'first five handled');
    await waitForFreshPark(loop);
    const cutAt = Date.now();
    await cut();
    await producer.publishMany(5);
    await waitFor(() => loop.handled.length >= 10, {
      timeoutMs: watchdogMs(blockMs) + 1000,
      message: 'entries published after the cut handled within blockMs + margin',
    });
    const resumedMs = Date.now() - cutAt;
    const result = await waitForQuiet(oracleInput(redis, producer, ledger), { timeoutMs: 5000 });
    assertOracle(result);
    expect(resumedMs).toBeLessThan(watchdogMs(blockMs) + 500);
    report(name, `resumed ${resumedMs} ms after the cut; ${formatReport(result)}`);
  }

  it('TcpProxy.cutAll: the parked read fails, the loop reconnects and resumes', async () => {
    // Invariant: a cut of the loop's link loses nothing (every acknowledged write handled once,
    // XPENDING 0) and the loop reads again within blockMs + max(1000, blockMs).
    const { stream, ledger, proxy, loop } = await loopBehindProxy('cut', { options: quiet });
    await cutAndResume('cutAll', loop, stream, ledger, async () => proxy.cutAll());
    expect(loop.logger.has(/Redis error/)).toBe(true);
    expect(loop.consumer.snapshot().state).toBe('running');
  });

  it('CLIENT KILL ID of the loop connection: the loop reconnects and resumes', async () => {
    // Invariant: the server dropping the loop's connection (found as name=echo-stream-loop,
    // cmd=xreadgroup, flags b in CLIENT LIST) loses nothing; the loop resumes within the margin.
    const stream = fresh('kill-id');
    const ledger = ledgerFile(stream);
    const loop = startLoop({ url: server.url, stream, group: 'g', ledger, options: quiet });
    await cutAndResume('CLIENT KILL ID', loop, stream, ledger, async () => {
      const id = await parkedLoopClientId();
      expect(Number(await redis.call('CLIENT', 'KILL', 'ID', id))).toBe(1);
    });
    // a new connection, under the same name
    const rows = (await clientList(redis)).filter((c) => c.name === 'echo-stream-loop');
    expect(rows).toHaveLength(1);
  });

  it('CLIENT KILL TYPE normal (every client but the caller): resumes, and a later stop still wakes the parked read at once', async () => {
    // Invariant: with the control connection killed too, the loop resumes and shutdown does not
    // wait out blockMs (CLIENT UNBLOCK with the re-learned CLIENT ID of the new connection).
    const stream = fresh('kill-all');
    const ledger = ledgerFile(stream);
    const loop = startLoop({
      url: server.url,
      stream,
      group: 'g',
      ledger,
      options: { ...quiet, blockMs: 3000 },
    });
    const producer = await publishAndHandle(redis, stream, loop, 3);
    await parkedLoopClientId();
    const killed = Number(await redis.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes'));
    expect(killed).toBeGreaterThanOrEqual(2); // the loop's and its control connection at least
    await producer.publishMany(3);
    await waitFor(() => loop.handled.length >= 6, { timeoutMs: watchdogMs(3000) + 1000 });
    assertOracle(await waitForQuiet(oracleInput(redis, producer, ledger), { timeoutMs: 5000 }));
    await waitForFreshPark(loop, 200);
    await redis.config('RESETSTAT');
    const stopAt = Date.now();
    await loop.stop(2000);
    const stopMs = Date.now() - stopAt;
    expect(stopMs).toBeLessThan(1000);
    // woken by CLIENT UNBLOCK (the id re-learned on the new connection), not by a dropped link
    expect((await commandStats(redis)).get('client|unblock')?.calls).toBeGreaterThanOrEqual(1);
    report('CLIENT KILL TYPE normal', `killed ${killed} clients; stop took ${stopMs} ms`);
  });

  it('blackhole (half-open link): the watchdog replaces the connection after blockMs + max(1000, blockMs); entries delivered into the lost reply are drained', async () => {
    // Invariant: a link that silently stops carrying bytes never stalls the loop for good: the
    // parked read is abandoned within blockMs + max(1000, blockMs) (+ a small margin), and the
    // entries the server delivered into the lost reply (now in the loop's own PEL) are handled
    // after the drain; nothing lost, XPENDING 0.
    const block = 500;
    const { stream, ledger, proxy, loop } = await loopBehindProxy('blackhole', {
      deadlineMs: 2000,
      options: { blockMs: block, minIdleMs: 60_000, claimIntervalMs: 60_000 },
    });
    const producer = await publishAndHandle(redis, stream, loop, 3);
    // a whole park: one cut short by the loop's second sweep (at a random point of its first
    // interval) would be abandoned sooner than the watchdog figure this test checks
    const read = await waitForFreshPark(loop, 40, { blockMs: block });
    proxy.blackhole(true);
    const holeAt = Date.now();
    // the parked read (still blocked on the server for ~450 ms) takes these: its reply is lost
    const intoTheHole = await producer.publishAtomically(4);
    await waitFor(() => loop.logger.has(/XREADGROUP got no reply within/), {
      timeoutMs: watchdogMs(block) + 1000,
      message: 'the watchdog abandoned the parked read',
    });
    // measured from the read parked on the server when the hole opened: the oldest XREADGROUP
    // BLOCK still in flight then (a later one would queue behind it on the same connection)
    const parkedThen = loop.calls.filter(
      (c) =>
        c.method === 'readGroup' &&
        c.args[5] !== undefined &&
        c.at <= holeAt &&
        (c.settledAt === undefined || c.settledAt >= holeAt),
    );
    const parked = parkedThen.reduce((oldest, c) => (c.at < oldest.at ? c : oldest), read);
    const watchdogAfterMs = Date.now() - parked.at;
    proxy.blackhole(false);
    const healedAt = Date.now();
    await producer.publishMany(3);
    const result = await waitForQuiet(oracleInput(redis, producer, ledger), { timeoutMs: 8000 });
    const recoveredMs = Date.now() - healedAt;
    assertOracle(result);
    expect(watchdogAfterMs).toBeGreaterThanOrEqual(watchdogMs(block));
    expect(watchdogAfterMs).toBeLessThan(watchdogMs(block) + 300);
    // the four came back through the own-PEL drain: their second delivery
    const drained = loop.handled.filter((h) => intoTheHole.includes(h.id));
    expect(drained.map((h) => h.attempts)).toEqual([2, 2, 2, 2]);
    report(
      'blackhole',
      `watchdog fired ${watchdogAfterMs} ms after the read was parked (${Date.now() - holeAt} ms ago ` +
        `the hole opened); all handled ${recoveredMs} ms after the heal; ${formatReport(result)}`,
    );
  });

  it('a slow link (TcpProxy.setDelay 250 ms each way): latency only, the watchdog does not misfire', async () => {
    // Invariant: 500 ms of extra round trip stays within the watchdog's max(1000, blockMs) margin:
    // no "no reply within", never degraded, every entry handled once, XPENDING 0.
    const block = 500;
    const { stream, ledger, proxy, loop } = await loopBehindProxy('delay', {
      options: { blockMs: block, minIdleMs: 60_000, claimIntervalMs: 60_000 },
    });
    await waitFor(() => loop.consumer.snapshot().state === 'running');
    proxy.setDelay(250);
    const producer = new OracleProducer(redis, stream);
    const delayedAt = Date.now();
    await producer.publishMany(5);
    await sleep(watchdogMs(block) + 500); // parked reads answer after ~blockMs + 500 ms meanwhile
    const result = await waitForQuiet(oracleInput(redis, producer, ledger), { timeoutMs: 5000 });
    assertOracle(result);
    const parkedReads = () =>
      loop.calls.filter(
        (c) => c.method === 'readGroup' && c.args[5] !== undefined && c.at >= delayedAt,
      );
    // An idle parked read answers after blockMs plus the 500 ms of extra round trip, and the
    // watchdog leaves it alone. Waited for rather than assumed within the sleep: on a loaded
    // machine the five entries may trickle in one read each, every read answered at once.
    const settled = (c: { at: number; settledAt?: number }) =>
      c.settledAt === undefined ? 0 : c.settledAt - c.at;
    await waitFor(() => parkedReads().some((c) => settled(c) >= block + 450), {
      timeoutMs: watchdogMs(block) + 3000,
      message: 'an idle parked read answered after blockMs + the slow link',
    });
    const slowest = Math.max(...parkedReads().map(settled));
    expect(slowest).toBeGreaterThanOrEqual(block + 450);
    expect(slowest).toBeLessThan(watchdogMs(block));
    expect(loop.logger.has(/no reply within/)).toBe(false);
    expect(loop.logger.lines.filter((l) => /^(warn|error)/.test(l))).toEqual([]);
    expect(loop.consumer.snapshot().state).toBe('running');
    report('setDelay 250', `slowest parked read ${slowest} ms (watchdog ${watchdogMs(block)} ms)`);
  });

  it('a lost reply that delivered entries (TcpProxy.dropNextReply): the entries are recovered from the own PEL', async () => {
    // Invariant: entries the server delivered into a reply the client never got stay in the
    // consumer's PEL; the watchdog drops the link and the drain hands them on (attempts 2), each
    // once; XPENDING 0.
    const { stream, ledger, proxy, loop } = await loopBehindProxy('drop-reply', { options: quiet });
    const producer = await publishAndHandle(redis, stream, loop, 2);
    await waitForFreshPark(loop, 40, { blockMs }); // a whole park: its watchdog is blockMs + 1000
    proxy.dropNextReply();
    const publishedAt = Date.now();
    const lost = await producer.publishAtomically(5);
    const result = await waitForQuiet(oracleInput(redis, producer, ledger), {
      timeoutMs: watchdogMs(blockMs) + 3000,
    });
    const recoveredMs = Date.now() - publishedAt;
    assertOracle(result);
    const recovered = loop.handled.filter((h) => lost.includes(h.id));
    expect(recovered.map((h) => h.attempts)).toEqual([2, 2, 2, 2, 2]);
    expect(loop.logger.has(/XREADGROUP got no reply within 2000 ms/)).toBe(true);
    expect(recoveredMs).toBeLessThan(watchdogMs(blockMs) + 1000);
    report(
      'dropNextReply',
      `recovered ${recoveredMs} ms after the lost delivery; ${formatReport(result)}`,
    );
  });
});

describe('XACK on a dropped connection (scenario 8)', () => {
  it('an XACK lost on the wire is re-sent after the reconnect: handled once, never redelivered, never a dead letter', async () => {
    // Invariant: an ack that fails with the link is kept and re-sent before anything else
    // (before the own-PEL drain), so the entry is not handed on again, and an ack failure never
    // counts toward dead-lettering. XPENDING 0, no dead-letter stream.
    let holeOpened = false;
    const { stream, ledger, proxy, loop } = await loopBehindProxy('ack-lost', {
      options: { blockMs: 1000, minIdleMs: 60_000, claimIntervalMs: 60_000 },
      handle: () => {
        if (holeOpened) return;
        holeOpened = true;
        proxy.blackhole(true); // the XACK of this entry goes nowhere
      },
    });
    const producer = await publishAndHandle(redis, stream, loop, 1);
    await sleep(200);
    expect(await pendingCount(redis, stream, 'g')).toBe(1); // handled, but the ack never arrived
    proxy.cutAll();
    proxy.blackhole(false);
    await producer.publishMany(2);
    const result = await waitForQuiet(oracleInput(redis, producer, ledger), { timeoutMs: 5000 });
    assertOracle(result); // includes: zero duplicates
    expect(loop.logger.has(/Redis error/)).toBe(true);
    // counted when the XACK's reply is read, which passes the proxy after Redis answered the oracle
    await waitFor(() => loop.consumer.snapshot().totalAcked === 3, { message: '3 acks counted' });
    expect(loop.consumer.snapshot()).toMatchObject({ totalDlq: 0, totalAcked: 3 });
    expect(await redis.exists(`${stream}:dlq`)).toBe(0);
    report('XACK lost, re-sent', formatReport(result));
  });

  it('an XACK lost when the consumer then stops: a peer redelivers it after minIdleMs (a duplicate, never a loss nor a dead letter)', async () => {
    // Invariant: an entry whose ack never reached Redis stays pending; a live peer reclaims it
    // after minIdleMs and handles it (attempts 2); it is not dead-lettered; XPENDING 0.
    const {
      stream,
      ledger,
      proxy,
      loop: a,
    } = await loopBehindProxy('ack-lost-stop', {
      consumer: 'a',
      options: { blockMs: 1000, minIdleMs: 500, claimIntervalMs: 60_000 },
      handle: () => proxy.blackhole(true),
    });
    const producer = new OracleProducer(redis, stream);
    const [id] = await producer.publishMany(1);
    await waitFor(() => a.handled.length === 1);
    await a.stop(300);
    await waitFor(() => a.logger.has(/acks at shutdown failed/), { timeoutMs: 3000 });
    const rows = (await redis.xpending(stream, 'g', '-', '+', 10)) as Array<[string, string]>;
    expect(rows.map((r) => r[1])).toEqual(['a']);
    proxy.blackhole(false);

    const b = startLoop({
      url: server.url,
      stream,
      group: 'g',
      consumer: 'b',
      ledger,
      options: { blockMs: 200, minIdleMs: 500, claimIntervalMs: 100 },
    });
    const result = await waitForQuiet(oracleInput(redis, producer, ledger), { timeoutMs: 5000 });
    assertOracle(result, { duplicatesAllowed: true });
    expect(result.duplicates).toBe(1);
    expect(b.handled).toEqual([expect.objectContaining({ id, attempts: 2 })]);
    expect(b.consumer.snapshot().totalDlq).toBe(0);
    expect(await redis.exists(`${stream}:dlq`)).toBe(0);
    expect(parkedRead(a)).toBeUndefined();
    report('XACK lost, consumer stopped', formatReport(result));
  });
});
