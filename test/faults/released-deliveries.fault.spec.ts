/**
 * What counts as a delivery (issue 10, defect 1): entries a graceful stop releases (read, read
 * ahead, never handed to a handler) are not charged the read that never reached a handler, so a
 * live peer's poison sweep, or a restart under the same consumer name (own-PEL drain), hands them
 * to a handler instead of dead-lettering them unhandled. And the poison sweep and the drain report
 * the same `attempts` for a poison pill: the deliveries that reached a handler before.
 *
 * In-process loops (./support/in-process-loop.ts) on a plain throw-away server.
 */
import type { Redis } from 'ioredis';
import { RedisServer } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';
import {
  pendingCount,
  startLoop,
  stopLoopsAndServersAfterEach,
  streamNames,
  type InProcessLoop,
} from './support/in-process-loop';

const fresh = streamNames('released');

stopLoopsAndServersAfterEach();

/** maxDeliveries 1 makes every wrongly charged delivery a dead letter. */
const STRICT = {
  maxDeliveries: 1,
  batchSize: 5,
  blockMs: 200,
  minIdleMs: 1000,
  claimIntervalMs: 200,
};

async function publish(redis: Redis, stream: string, count: number): Promise<string[]> {
  const pipeline = redis.pipeline();
  for (let i = 0; i < count; i++)
    pipeline.xadd(stream, '*', 'id', `r-${i}`, 'data', JSON.stringify({ i }));
  const replies = (await pipeline.exec()) ?? [];
  return replies.map(([, id]) => String(id));
}

type PendingRow = [string, string, number, number];

async function pendingRows(redis: Redis, stream: string, group: string): Promise<PendingRow[]> {
  return (await redis.xpending(stream, group, '-', '+', 1000)) as PendingRow[];
}

/** Starts `a`, lets it handle one entry of a full batch (a read-ahead is out), then stops it. */
async function releaseMidBatch(
  server: RedisServer,
  stream: string,
  extra: { dedup?: boolean } = {},
): Promise<{ a: InProcessLoop; ids: string[]; released: PendingRow[] }> {
  const redis = server.client();
  const ids = await publish(redis, stream, 20);
  const a = startLoop({
    url: server.url,
    stream,
    group: 'g',
    consumer: 'a',
    options: { ...STRICT, ...extra },
    handle: () => sleep(150),
  });
  await waitFor(() => a.handled.length >= 1, { message: 'a handled its first entry' });
  await a.stop(5000);
  const released = await pendingRows(redis, stream, 'g');
  return { a, ids, released };
}

/**
 * Once `second` took over from `first`: nothing pending, nothing dead-lettered, every id of
 * `ids` handled once between them, each by `second` on its first attempt.
 */
async function expectEachHandledOnce(
  redis: Redis,
  stream: string,
  ids: readonly string[],
  first: InProcessLoop,
  second: InProcessLoop,
): Promise<void> {
  await waitFor(async () => (await pendingCount(redis, stream, 'g')) === 0, {
    message: 'nothing pending',
  });
  await sleep(300);
  expect(await redis.xlen(`${stream}:dlq`)).toBe(0);
  const handled = [...first.handled, ...second.handled].map((h) => h.entryId).sort();
  expect(handled).toEqual([...ids].sort());
  for (const h of second.handled) expect(h.attempts).toBe(1);
}

describe('entries released at a graceful stop are not charged the read that never reached a handler', () => {
  it('a live peer (maxDeliveries 1) handles every released entry; none is dead-lettered unhandled', async () => {
    const server = await RedisServer.start();
    const redis = server.client();
    const stream = fresh('peer');
    const { a, ids, released } = await releaseMidBatch(server, stream);
    // the rest of the first batch and the read-ahead batch were released
    expect(released.length).toBeGreaterThanOrEqual(5);
    expect(a.logger.has(/released \d+ (unstarted|read-ahead) entries/)).toBe(true);

    const b = startLoop({ url: server.url, stream, group: 'g', consumer: 'b', options: STRICT });
    await expectEachHandledOnce(redis, stream, ids, a, b);
    // what the peer saw in XPENDING: the read that never reached a handler was not charged
    expect(released.map((r) => r[3])).toEqual(released.map(() => 0));
  });

  it('with dedup (two reads sent ahead) both reads ahead go back uncharged; a live peer handles every entry once', async () => {
    const server = await RedisServer.start();
    const redis = server.client();
    const stream = fresh('dedup');
    const { a, ids, released } = await releaseMidBatch(server, stream, { dedup: true });
    // the rest of the first batch (at most 4) and both batches read ahead (5 + 5): more than
    // the rest and one read ahead could be
    expect(released.length).toBeGreaterThan(9);
    expect(released.map((r) => r[3])).toEqual(released.map(() => 0));
    const b = startLoop({
      url: server.url,
      stream,
      group: 'g',
      consumer: 'b',
      options: { ...STRICT, dedup: true },
    });
    await expectEachHandledOnce(redis, stream, ids, a, b);
  });

  it('a restart under the same consumer name (own-PEL drain) handles them too', async () => {
    const server = await RedisServer.start();
    const redis = server.client();
    const stream = fresh('restart');
    const { a, ids, released } = await releaseMidBatch(server, stream);
    expect(released.length).toBeGreaterThanOrEqual(5);

    const again = startLoop({
      url: server.url,
      stream,
      group: 'g',
      consumer: 'a',
      options: STRICT,
    });
    await expectEachHandledOnce(redis, stream, ids, a, again);
  });
});

describe('the poison sweep and the own-PEL drain agree on a poison pill', () => {
  it('both dead-letter an entry delivered maxDeliveries times with attempts = maxDeliveries', async () => {
    const server = await RedisServer.start();
    const redis = server.client();
    const stream = fresh('agree');
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const [viaDrain, viaSweep] = await publish(redis, stream, 2);
    // two deliveries each that reached a handler and never an ack (two crashes, say): the first
    // held by 'a' (it drains it at its restart), the second by 'x', which never comes back
    await redis.xreadgroup('GROUP', 'g', 'a', 'COUNT', 1, 'STREAMS', stream, '>');
    await redis.xreadgroup('GROUP', 'g', 'a', 'COUNT', 1, 'STREAMS', stream, '0');
    await redis.xreadgroup('GROUP', 'g', 'x', 'COUNT', 1, 'STREAMS', stream, '>');
    await redis.xreadgroup('GROUP', 'g', 'x', 'COUNT', 1, 'STREAMS', stream, '0');
    const options = { maxDeliveries: 2, minIdleMs: 300, claimIntervalMs: 100, blockMs: 200 };

    const a = startLoop({ url: server.url, stream, group: 'g', consumer: 'a', options });
    await waitFor(async () => (await pendingCount(redis, stream, 'g')) === 0, {
      message: 'both poison pills dead-lettered',
    });
    const letters = (await redis.xrange(`${stream}:dlq`, '-', '+')).map(([, flat]) => {
      const map = new Map<string, string>();
      for (let i = 0; i + 1 < flat.length; i += 2) map.set(flat[i], flat[i + 1]);
      return map;
    });
    expect(letters.map((l) => l.get('dlq_entry_id')).sort()).toEqual([viaDrain, viaSweep].sort());
    for (const letter of letters) {
      expect(letter.get('dlq_reason')).toBe('max_deliveries');
      expect(`${letter.get('dlq_entry_id')} attempts ${letter.get('dlq_attempts')}`).toBe(
        `${letter.get('dlq_entry_id')} attempts 2`,
      );
    }
    expect(a.handled).toEqual([]);
  });
});
