/**
 * Partition loops that leave the shared read (docs/partitions.md "Connections"), on a real
 * redis-server through the Nest module. Each test states the invariant it checks:
 * - hand-over: partitions handed over while their loops are parked in the shared read, with
 *   entries arriving all the while, lose and strand nothing;
 * - lease lost: what the parked round still hands the loops stopped at once is released, never
 *   left pending under the old owner (fails without that release).
 */
import type { Redis } from 'ioredis';
import { ConsumerStats, partitionStreamOf, StreamProducer } from '../../lib';
import { PartitionApps, type HandlerSpec } from '../support/partition-apps';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { sleep, waitFor } from '../support/wait-for';

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

let n = 0;
const fresh = (tag: string) => `handover-${tag}-${process.pid}-${++n}`;

describe('a hand-over while the loops are parked in the shared read', () => {
  it('loses and strands nothing: every entry handled once, in key order, none left pending', async () => {
    // Invariant: a loop that leaves the shared read gets what its last round read for it (it
    // settles or releases it); nothing stays in the old owner's PEL (minIdleMs is 60 s here, so
    // an entry stranded there would still be pending at the end)
    const stream = fresh('handover');
    const done = new Map<string, number[]>();
    const runs: string[] = [];
    const spec = (app: string): HandlerSpec[] => [
      {
        stream,
        options: { partitions: 8, partitionLeaseMs: 1000, minIdleMs: 60_000, concurrency: 4 },
        handle: (m) => {
          runs.push(`${app}:${m.key}:${m.payload.seq}`);
          done.set(m.key!, [...(done.get(m.key!) ?? []), m.payload.seq]);
        },
      },
    ];
    const a = await apps.start('a', spec('a'), {}, (_, owned) => owned === 8);
    // the producer is an app of its own: a's close must not stop the publishing
    const producer = (await apps.start('producer', [])).get(StreamProducer);
    const keys = 40;
    // publish all the while, a round of one entry per key every few ms, into parked loops, until
    // a few rounds after the last hand-over (each app gets entries after it joined, whatever the
    // machine's speed)
    let rounds = 0;
    let stop = false;
    const publishing = (async () => {
      for (let seq = 0; !stop; seq++) {
        for (let k = 0; k < keys; k++) {
          await producer.publish(stream, { seq }, { key: `k${k}` });
          if (k % 8 === 7) await sleep(2);
        }
        rounds = seq + 1;
      }
    })();
    const fewRoundsMore = async () => {
      const from = rounds;
      await waitFor(() => rounds >= from + 4, { timeoutMs: 20_000 });
    };
    const split = (want: number) => (_: string, owned: number) => owned === want;
    await fewRoundsMore();
    await apps.start('b', spec('b'), {}, split(4)); // a hands 4 over
    await fewRoundsMore();
    await apps.start('c', spec('c'), {}, (_, owned) => owned >= 2); // a and b hand over
    await fewRoundsMore();
    await apps.close(a); // a hands all of its own over
    await fewRoundsMore();
    stop = true;
    await publishing;
    const perKey = rounds;
    await waitFor(() => [...done.values()].reduce((sum, l) => sum + l.length, 0) >= keys * perKey, {
      timeoutMs: 30_000,
      message: 'every entry handled',
    });
    for (let k = 0; k < keys; k++)
      expect(done.get(`k${k}`)).toEqual(Array.from({ length: perKey }, (_, i) => i));
    expect(runs).toHaveLength(keys * perKey);
    expect(runs.some((r) => r.startsWith('a:'))).toBe(true);
    expect(runs.some((r) => r.startsWith('b:'))).toBe(true);
    expect(runs.some((r) => r.startsWith('c:'))).toBe(true);
    // nothing pending anywhere (acks go with the next read), none under the old owner
    const partitionStreams = Array.from({ length: 8 }, (_, i) => partitionStreamOf(stream, i));
    await waitFor(
      async () => {
        let pending = 0;
        for (const s of partitionStreams)
          pending += Number(((await redis.xpending(s, 'g')) as [number])[0]);
        return pending === 0;
      },
      { timeoutMs: 10_000, message: 'no entry pending in any partition' },
    );
    for (const s of partitionStreams)
      expect(await redis.xpending(s, 'g', '-', '+', 100, 'a')).toEqual([]);
  }, 90_000);
});

describe('a lease lost while the loops are parked in the shared read', () => {
  /** What became of the entries added once an app lost every partition while parked. */
  interface LostOutcome {
    /** Pending under the old owner, idle past minIdleMs: released for the new owner. */
    released: number;
    /** Pending under the old owner, not released: the new owner waits minIdleMs for them. */
    stranded: string[];
    /** Handled by the old owner after it lost the partition. */
    handledLate: number;
  }

  /**
   * An app (as a user whose ACL refuses CLIENT UNBLOCK: a parked round cannot be woken, it waits
   * for entries or its BLOCK) owns 16 partitions, its loops parked in the shared read beside a
   * plain loop (while one stays, the stopping loops may not drop the connection it reads on);
   * another process takes every lease; once the app has seen it (every loop stopped with
   * timeout 0), an entry is added to every partition in one EXEC, waking the parked round.
   */
  async function loseWhileParked(minIdleMs: number): Promise<LostOutcome> {
    const stream = fresh('lost');
    const handledByA: string[] = [];
    const app = await apps.start(
      'a',
      [
        {
          stream,
          options: { partitions: 16, partitionLeaseMs: 1000, minIdleMs },
          handle: (m) => void handledByA.push(m.entryId),
        },
        // parked all along: its next pause read or sweep is a minute away
        { stream: `${stream}-plain`, options: { claimIntervalMs: 60_000, minIdleMs: 120_000 } },
      ],
      { connection: `redis://nounblock:pw@127.0.0.1:${server.port}` },
      (_, owned) => owned === 16,
    );
    const stats = app.get(ConsumerStats);
    await sleep(500);
    await redis.eval(
      `local t = redis.call('TIME')
       local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
       for i = 0, 15 do
         redis.call('HSET', KEYS[1], 'o:' .. i, 'thief', 'e:' .. i, now + 600000)
         redis.call('HINCRBY', KEYS[1], 'g:' .. i, 1)
       end`,
      1,
      `{${stream}}:echo-leases:g`,
    );
    await waitFor(() => stats.get(stream, 'g')?.partitions?.length === 0, {
      timeoutMs: 5000,
      intervalMs: 2,
      message: 'every partition lost',
    });
    const multi = redis.multi();
    for (let i = 0; i < 16; i++)
      multi.xadd(
        partitionStreamOf(stream, i),
        '*',
        'id',
        `late-${i}`,
        'data',
        '{}',
        'pkey',
        `k${i}`,
      );
    const added = new Set((await multi.exec())!.map(([, id]) => String(id)));
    await sleep(500); // the woken round's entries reached their loops and were settled
    /** The rows of `a`'s PEL in every partition: id, idle ms. */
    const rowsOfA = async (): Promise<Array<[number, string, number]>> => {
      const rows: Array<[number, string, number]> = [];
      for (let i = 0; i < 16; i++) {
        const pending = (await redis.xpending(
          partitionStreamOf(stream, i),
          'g',
          'IDLE',
          0,
          '-',
          '+',
          100,
          'a',
        )) as Array<[string, string, number, number]>;
        for (const [id, , idle] of pending) rows.push([i, id, idle]);
      }
      return rows;
    };
    // a machine under load may take longer to release them: a stranded entry stays stranded
    // (idle far under minIdleMs) however long this waits
    await waitFor(async () => (await rowsOfA()).every(([, , idle]) => idle >= minIdleMs), {
      timeoutMs: 5000,
      message: 'the entries the round handed the stopped loops released',
    }).catch(() => undefined);
    const outcome: LostOutcome = {
      released: 0,
      stranded: [],
      handledLate: handledByA.filter((id) => added.has(id)).length,
    };
    for (const [i, id, idle] of await rowsOfA())
      if (idle >= minIdleMs) outcome.released++;
      else outcome.stranded.push(`${i}:${id} idle ${idle} ms`);
    await apps.close(app);
    return outcome;
  }

  it('entries the round still hands the stopped loops are released at once, never left pending here unseen', async () => {
    // Invariant: a loop whose lease is taken stops at once (stop(0)) while parked in the shared
    // read; entries the round hands it after that are released (idle minIdleMs: the new owner's
    // sweep takes them at once), never handled there, never kept pending under this consumer
    // (where the new owner would wait minIdleMs, 60 s here, for them). The round may also end
    // before the entries come (a BLOCK running out, the connection dropped once every loop of
    // it left): then nothing reached a stopped loop and the case is tried again, 4 times at most.
    await redis.acl('SETUSER', 'nounblock', 'on', '>pw', '~*', '&*', '+@all', '-client|unblock');
    const outcomes: LostOutcome[] = [];
    for (let attempt = 0; attempt < 4; attempt++) {
      const outcome = await loseWhileParked(60_000);
      outcomes.push(outcome);
      console.log(
        `lease lost while parked, attempt ${attempt + 1}: ${outcome.released} entries reached the stopped loops and were released (idle >= minIdleMs), ${outcome.handledLate} handled there, stranded: [${outcome.stranded.join(', ')}]`,
      );
      expect(outcome.stranded).toEqual([]);
      expect(outcome.handledLate).toBe(0);
      if (outcome.released > 0) break;
    }
    // the case under test happened (a Redis before 7.2 serves a woken multi-stream read from the
    // first stream that got entries: one at least)
    expect(outcomes.some((o) => o.released > 0)).toBe(true);
  }, 60_000);
});
