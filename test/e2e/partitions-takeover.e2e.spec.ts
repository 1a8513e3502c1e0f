/**
 * A partition's take-over charges its last owner's pending entries one delivery, not two
 * (docs/partitions.md "Order"), on a real redis-server through the Nest module.
 *
 * Invariant: the new owner claims the entries a crashed owner left pending without a delivery
 * (XAUTOCLAIM JUSTID) and its own-PEL drain counts the one delivery they get: `m.attempts` and the
 * group's delivery count are the crashed owner's deliveries + 1. Charged twice (a claim with
 * bodies, then the drain), a partition that changes hands a few times sends entries to the
 * dead-letter path that were never handed to a handler `maxDeliveries` times.
 */
import type { Redis } from 'ioredis';
import { partitionOf, partitionStreamOf, type StreamMessage } from '../../lib';
import { PartitionApps } from '../support/partition-apps';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

let server: RedisServer;
let redis: Redis;
const apps = new PartitionApps(() => server.url);

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
afterEach(() => apps.closeAll());
afterAll(async () => {
  redis.disconnect();
  await stopAllRedisServers();
});

it("a new owner takes the crashed owner's pending entries and hands each on with one more delivery", async () => {
  const stream = `takeover-${process.pid}`;
  const partitions = 2;
  const key = 'acct-1';
  const partitionStream = partitionStreamOf(stream, partitionOf(key, partitions));
  await redis.set(`{${stream}}:echo-partitions`, String(partitions));
  await redis.xgroup('CREATE', partitionStream, 'g', '0', 'MKSTREAM');
  for (let seq = 0; seq < 3; seq++)
    await redis.xadd(
      partitionStream,
      '*',
      'id',
      `e${seq}`,
      'data',
      JSON.stringify({ seq }),
      'pkey',
      key,
    );
  // a crashed owner: it read the three entries (one delivery each) and never acked them
  const read = (await redis.xreadgroup(
    'GROUP',
    'g',
    'crashed',
    'COUNT',
    10,
    'STREAMS',
    partitionStream,
    '>',
  )) as Array<[string, unknown[]]>;
  expect(read[0][1]).toHaveLength(3);

  const seen: Array<{ seq: number; attempts: number }> = [];
  await apps.start('next-owner', [
    {
      stream,
      options: { partitions, maxDeliveries: 2, minIdleMs: 60_000 },
      handle: (m: StreamMessage<{ seq: number }>) => {
        seen.push({ seq: m.payload.seq, attempts: m.attempts });
      },
    },
  ]);
  await waitFor(() => seen.length === 3, {
    timeoutMs: 10_000,
    message: 'the three entries handled',
  });
  // one delivery to the crashed owner + one here; with maxDeliveries 2 each still reaches the
  // handler (charged twice they would have gone down the dead-letter path unhandled)
  expect(seen).toEqual([
    { seq: 0, attempts: 2 },
    { seq: 1, attempts: 2 },
    { seq: 2, attempts: 2 },
  ]);
  await waitFor(async () => Number((await redis.xpending(partitionStream, 'g'))[0]) === 0, {
    timeoutMs: 5000,
    message: 'nothing left pending',
  });
  expect(await redis.exists(`${stream}:dlq`)).toBe(0);
});
