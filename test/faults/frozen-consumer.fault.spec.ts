/**
 * A consumer that froze past `minIdleMs` never takes back what a peer took over meanwhile
 * (docs/delivery.md "A consumer that froze"). A process that stops answering (SIGSTOP, a long
 * synchronous stretch, a VM pause) keeps its entries in hand; a peer's sweep claims them after
 * `minIdleMs`. When the frozen one wakes, its heartbeat, its due retries, its dead-letter path and
 * its release at stop used to claim with a min idle time of 0, which moves an entry whoever holds
 * it: both ran it, and both dead-lettered it. Each now claims only what the group's PEL still names
 * it the owner of.
 *
 * The peer's takeover is the test's own XCLAIM, at a moment the test picks (the frozen process is
 * in-process and busy, entries in hand); in-process loops (./support/in-process-loop.ts) on a
 * plain throw-away server.
 */
import type { Redis } from 'ioredis';
import { RedisServer } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';
import {
  pendingCount,
  startLoop,
  stopLoopsAndServersAfterEach,
  streamNames,
} from './support/in-process-loop';

const fresh = streamNames('frozen');

stopLoopsAndServersAfterEach();

type PendingRow = [string, string, number, number];

async function owners(redis: Redis, stream: string): Promise<string[]> {
  const rows = (await redis.xpending(stream, 'g', '-', '+', 100)) as PendingRow[];
  return rows.map((r) => r[1]);
}

/** The peer's sweep, as after `minIdleMs` of silence from the holder: the entry is `b`'s now. */
async function peerTakesOver(redis: Redis, stream: string, entryId: string): Promise<void> {
  await redis.xclaim(stream, 'g', 'b', 0, entryId, 'JUSTID');
}

async function published(redis: Redis, stream: string): Promise<string> {
  await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
  return String(await redis.xadd(stream, '*', 'id', 'f-1', 'data', '{}'));
}

describe('a consumer that froze past minIdleMs', () => {
  it('its heartbeat leaves an entry in hand that a peer took over with the peer (once named in a warning)', async () => {
    const server = await RedisServer.start();
    const redis = server.client();
    const stream = fresh('heartbeat');
    const entryId = await published(redis, stream);
    let takenOver = false;
    const a = startLoop({
      url: server.url,
      stream,
      group: 'g',
      consumer: 'a',
      // the heartbeat ticks every 150 ms and touches what is held 300 ms or more
      options: { minIdleMs: 600, blockMs: 200 },
      handle: async () => {
        await peerTakesOver(redis, stream, entryId);
        takenOver = true;
        await sleep(1500); // four heartbeat ticks or more, the entry in hand
      },
    });
    await waitFor(() => takenOver, { message: 'the peer took the entry over' });
    await sleep(900);
    expect(await owners(redis, stream)).toEqual(['b']);
    await waitFor(() => a.handled.length === 1, { message: 'the handler returned' });
    const warned = a.logger.lines.filter((l) =>
      l.includes(`entries ${entryId} are no longer this consumer's`),
    );
    expect(warned).toHaveLength(1);
  });

  it('its due retry of an entry a peer took over is left to the peer: one run there, one dead letter in all', async () => {
    const server = await RedisServer.start();
    const redis = server.client();
    const stream = fresh('retry');
    const entryId = await published(redis, stream);
    const calls: string[] = [];
    const options = {
      maxDeliveries: 2,
      retry: { type: 'fixed' as const, delayMs: 800 },
      minIdleMs: 20_000, // no sweep moves the entry: only the test's takeover does
      blockMs: 200,
    };
    const a = startLoop({
      url: server.url,
      stream,
      group: 'g',
      consumer: 'a',
      options,
      handle: () => {
        calls.push('a');
        throw new Error('a fails');
      },
    });
    await waitFor(() => calls.length === 1, { message: "a's first attempt failed" });
    // a's retry waits 800 ms; meanwhile the peer takes the entry and is still busy with it when
    // a's retry comes due
    await peerTakesOver(redis, stream, entryId);
    const b = startLoop({
      url: server.url,
      stream,
      group: 'g',
      consumer: 'b',
      options,
      handle: async () => {
        calls.push('b');
        await sleep(1500);
        calls.push('b failed');
        throw new Error('b fails');
      },
    });
    await waitFor(
      async () => calls.includes('b failed') && (await pendingCount(redis, stream, 'g')) === 0,
      { timeoutMs: 15_000, message: "b's attempt failed and the entry was dead-lettered" },
    );
    await sleep(300); // a second letter, were one on its way
    const letters = await redis.xrange(`${stream}:dlq`, '-', '+');
    expect(calls).toEqual(['a', 'b', 'b failed']);
    expect(letters).toHaveLength(1);
    expect(a.handled).toEqual([]);
    expect(b.handled).toEqual([]);
    expect(
      a.logger.lines.some((l) =>
        l.includes(`due retries (${entryId}) are no longer this consumer's`),
      ),
    ).toBe(true);
  });

  it('its release at stop leaves a waiting retry a peer took over with the peer', async () => {
    const server = await RedisServer.start();
    const redis = server.client();
    const stream = fresh('release');
    const entryId = await published(redis, stream);
    let failed = false;
    const a = startLoop({
      url: server.url,
      stream,
      group: 'g',
      consumer: 'a',
      options: { retry: { type: 'fixed', delayMs: 10_000 }, minIdleMs: 20_000, blockMs: 200 },
      handle: () => {
        failed = true;
        throw new Error('a fails');
      },
    });
    await waitFor(() => failed, { message: "a's attempt failed: its retry waits" });
    await peerTakesOver(redis, stream, entryId);
    await a.stop(); // releases its waiting retries to peers
    expect(await owners(redis, stream)).toEqual(['b']);
    const rows = (await redis.xpending(stream, 'g', '-', '+', 10)) as PendingRow[];
    expect(rows[0][2]).toBeLessThan(5_000); // the peer's idle time, not a release's
  });

  it('its dead-letter path leaves an entry a peer took over with the peer: no copy, no ack', async () => {
    const server = await RedisServer.start();
    const redis = server.client();
    const stream = fresh('letter');
    const entryId = await published(redis, stream);
    let failed = false;
    const a = startLoop({
      url: server.url,
      stream,
      group: 'g',
      consumer: 'a',
      options: { maxDeliveries: 1, minIdleMs: 20_000, blockMs: 200 },
      handle: async () => {
        // its last attempt: frozen in it, the entry taken over, then it fails for good
        await peerTakesOver(redis, stream, entryId);
        failed = true;
        throw new Error('a fails for good');
      },
    });
    await waitFor(() => failed, { message: "a's attempt failed" });
    // its dead-letter path ran (it asks Redis whether the entry is still its own, then says so)
    await waitFor(
      () => a.logger.lines.some((l) => l.includes('Not dead-lettering (max_deliveries)')),
      { message: "a's dead-letter path left the entry alone" },
    );
    expect(await redis.xlen(`${stream}:dlq`)).toBe(0);
    expect(await owners(redis, stream)).toEqual(['b']);
  });
});
