/**
 * Durable publish (docs/scale.md "Durable publish"): `publish` / `publishMany` with
 * `{ replicas, replicaTimeoutMs }` end their write pipeline with `WAIT`, against real servers: a
 * master with no replica (the typed error, the entry written all the same) and a master with one
 * real replica (`--replicaof`). Checked on the servers: the entry is on the master, and on the
 * replica the moment the publish resolves.
 */
import 'reflect-metadata';
import type { INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import {
  EchoStreamModule,
  EchoStreamPublishError,
  EchoStreamReplicationError,
  StreamProducer,
  type EchoStreamModuleOptions,
} from '../../lib';
import { chosenServer } from '../../scripts/lib/echo-server.mjs';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';

let lonely: RedisServer; // a master without replicas
let master: RedisServer; // a master with one replica
let replica: RedisServer;
let lonelyRedis: Redis;
let masterRedis: Redis;
let replicaRedis: Redis;
const apps: INestApplicationContext[] = [];
let n = 0;

beforeAll(async () => {
  [lonely, master] = await Promise.all([RedisServer.start(), RedisServer.start()]);
  replica = await RedisServer.start({ replicaOf: master });
  await master.waitReplicas(1);
  lonelyRedis = lonely.client();
  masterRedis = master.client();
  replicaRedis = replica.client();
});
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});
afterAll(async () => {
  await stopAllRedisServers();
});

const fresh = (prefix: string) => `${prefix}-${process.pid}-${++n}`;
/** Redis 8.6 keeps idempotent ids itself (IDMP): no index key, its own counters. */
const NATIVE = chosenServer() === 'redis86';

async function producerOn(
  server: RedisServer,
  extra: EchoStreamModuleOptions = {},
): Promise<StreamProducer> {
  const moduleRef = await Test.createTestingModule({
    imports: [EchoStreamModule.forRoot({ connection: server.url, ...extra })],
  }).compile();
  const app = moduleRef.createNestApplication();
  apps.push(app);
  await app.init();
  return app.get(StreamProducer);
}

async function entryIdsOf(redis: Redis, stream: string): Promise<string[]> {
  return (await redis.xrange(stream, '-', '+')).map(([entryId]) => entryId);
}

async function waitCalls(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  return Number(/^cmdstat_wait:calls=(\d+)/m.exec(info)?.[1] ?? 0);
}

async function clientNames(redis: Redis): Promise<string[]> {
  const list = String(await redis.call('CLIENT', 'LIST'));
  return [...list.matchAll(/ name=(\S*)/g)].map((m) => m[1]);
}

describe('durable publish (WAIT)', () => {
  it('replicas: 1 on a master without replica rejects with EchoStreamReplicationError after replicaTimeoutMs; the entry IS in the stream', async () => {
    const producer = await producerOn(lonely);
    const stream = fresh('lonely');
    const startedAt = Date.now();
    const err = await producer
      .publish(stream, { n: 1 }, { replicas: 1, replicaTimeoutMs: 400 })
      .catch((e: unknown) => e);
    const ms = Date.now() - startedAt;
    expect(err).toBeInstanceOf(EchoStreamReplicationError);
    expect(err).not.toBeInstanceOf(EchoStreamPublishError);
    const typed = err as EchoStreamReplicationError;
    expect(typed).toMatchObject({
      name: 'EchoStreamReplicationError',
      stream,
      replicas: 1,
      acknowledged: 0,
      timeoutMs: 400,
    });
    expect(typed.ids).toHaveLength(1);
    expect(typed.entryIds).toHaveLength(1);
    expect(typed.message).toContain('only 0 of 1 replica(s) acknowledged within 400 ms');
    expect(typed.message).toContain(`entry id ${typed.entryIds[0]}`);
    expect(typed.message).toContain('IS written on the master');
    // WAIT waits its timeout on the server; the reply comes right after (generous upper bound)
    expect(ms).toBeGreaterThanOrEqual(395);
    expect(ms).toBeLessThan(3000);
    // the caller must know it is NOT "not published": the entry is there, with its branded id
    expect(await entryIdsOf(lonelyRedis, stream)).toEqual(typed.entryIds);
    const [[, fields]] = await lonelyRedis.xrange(stream, '-', '+');
    expect(fields.slice(0, 2)).toEqual(['id', typed.ids[0]]);
  });

  it('replicaTimeoutMs longer than publishTimeoutMs: still the replication error, not a publish timeout', async () => {
    // WAIT answers after replicaTimeoutMs; the publish's bound is publishTimeoutMs more: 1 s of
    // slack for the reply (CI's 2 cores beside three other spec files once took more than 200 ms)
    const producer = await producerOn(lonely, { publishTimeoutMs: 1000 });
    const stream = fresh('longwait');
    const startedAt = Date.now();
    const err = await producer
      .publish(stream, { n: 1 }, { replicas: 1, replicaTimeoutMs: 1500 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EchoStreamReplicationError);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1495);
    expect(await lonelyRedis.xlen(stream)).toBe(1);
  });

  it('replicas: 1 with a real replica resolves, and the replica has the entry the moment it does', async () => {
    const producer = await producerOn(master);
    const stream = fresh('replicated');
    const receipt = await producer.publish(stream, { n: 1 }, { replicas: 1 });
    // WAIT counted the replica's ack of this write: it is applied there already
    expect(await entryIdsOf(replicaRedis, stream)).toEqual([receipt.entryId]);
    expect(await entryIdsOf(masterRedis, stream)).toEqual([receipt.entryId]);
    // many concurrent durable publishes all resolve (they queue behind each other's WAIT)
    const receipts = await Promise.all(
      Array.from({ length: 50 }, (_, i) => producer.publish(stream, { i }, { replicas: 1 })),
    );
    const onReplica = new Set(await entryIdsOf(replicaRedis, stream));
    for (const r of receipts) expect(onReplica.has(r.entryId)).toBe(true);
  });

  it('replicas: 2 with one replica rejects naming 1 of 2 acknowledged', async () => {
    const producer = await producerOn(master);
    const stream = fresh('twoasked');
    const err = (await producer
      .publish(stream, { n: 1 }, { replicas: 2, replicaTimeoutMs: 300 })
      .catch((e: unknown) => e)) as EchoStreamReplicationError;
    expect(err).toBeInstanceOf(EchoStreamReplicationError);
    expect(err).toMatchObject({ replicas: 2, acknowledged: 1, timeoutMs: 300 });
    expect(err.message).toContain('only 1 of 2 replica(s) acknowledged within 300 ms');
    expect(await entryIdsOf(replicaRedis, stream)).toEqual(err.entryIds);
  });

  it('publishMany with replicas: resolves with a replica (all on it), rejects without one naming every entry written', async () => {
    const withReplica = await producerOn(master);
    const stream = fresh('many');
    const receipts = await withReplica.publishMany(stream, [{ i: 0 }, { i: 1 }, { i: 2 }], {
      replicas: 1,
      replicaTimeoutMs: 500,
      maxLen: 1000,
    });
    expect(await entryIdsOf(replicaRedis, stream)).toEqual(receipts.map((r) => r.entryId));

    const without = await producerOn(lonely);
    const other = fresh('many-lonely');
    const startedAt = Date.now();
    const err = (await without
      .publishMany(other, [{ i: 0 }, { i: 1 }, { i: 2 }, { i: 3 }], {
        replicas: 1,
        replicaTimeoutMs: 300,
      })
      .catch((e: unknown) => e)) as EchoStreamReplicationError;
    expect(err).toBeInstanceOf(EchoStreamReplicationError);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(295);
    expect(err.ids).toHaveLength(4);
    expect(err.entryIds).toEqual(await entryIdsOf(lonelyRedis, other));
    expect(err.message).toContain('the 4 entries ARE written on the master');
  });

  it('a durable publish waiting for replicas does not hold up plain publishes (its own connection)', async () => {
    // on a connection shared with the WAIT, the plain publish would queue behind it past its
    // publishTimeoutMs and reject (Redis reads nothing more from a client blocked in WAIT)
    const producer = await producerOn(lonely, { publishTimeoutMs: 500 });
    const stream = fresh('nohold');
    const order: string[] = [];
    const durable = producer
      .publish(stream, { durable: true }, { replicas: 1, replicaTimeoutMs: 1500 })
      .catch(() => order.push('durable rejected'));
    await new Promise((r) => setTimeout(r, 100)); // the WAIT is parked on the server now
    await producer.publish(stream, { plain: true });
    order.push('plain resolved');
    await durable;
    expect(order).toEqual(['plain resolved', 'durable rejected']);
    expect(await clientNames(lonelyRedis)).toContain('echo-stream-publish');
  });

  it('without the option nothing changes: no WAIT is sent and no connection is opened for it; shutdown closes it once opened', async () => {
    const producer = await producerOn(lonely);
    const stream = fresh('plain');
    const before = await waitCalls(lonelyRedis);
    await producer.publish(stream, { n: 1 });
    await producer.publishMany(stream, [{ n: 2 }, { n: 3 }]);
    await producer.publish(stream, { n: 4 }, { replicas: 0, replicaTimeoutMs: 50 });
    expect(await waitCalls(lonelyRedis)).toBe(before);
    expect(await clientNames(lonelyRedis)).not.toContain('echo-stream-publish');
    expect(await lonelyRedis.xlen(stream)).toBe(4);

    await producer.publish(stream, { n: 5 }, { replicas: 1, replicaTimeoutMs: 10 }).catch(() => 0);
    expect(await waitCalls(lonelyRedis)).toBe(before + 1);
    expect(await clientNames(lonelyRedis)).toContain('echo-stream-publish');
    await Promise.all(apps.splice(0).map((app) => app.close()));
    expect(await clientNames(lonelyRedis)).not.toContain('echo-stream-publish');
  });

  it('bad replicas / replicaTimeoutMs values are rejected with the option and the value named, nothing written', async () => {
    const producer = await producerOn(lonely);
    const stream = fresh('bad');
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ replicas: -1 }, /option 'replicas' must be an integer >= 0 .*got number -1/],
      [{ replicas: 1.5 }, /option 'replicas' must be an integer >= 0 .*got number 1.5/],
      [{ replicas: '1' }, /option 'replicas' must be an integer >= 0 .*got '1'/],
      [{ replicas: Number.NaN }, /option 'replicas'.*got number NaN/],
      [
        { replicas: 1, replicaTimeoutMs: 0 },
        /'replicaTimeoutMs' must be an integer from 1 to 600000 \(ms\), got number 0/,
      ],
      [{ replicas: 1, replicaTimeoutMs: 2.5 }, /'replicaTimeoutMs'.*got number 2.5/],
      [{ replicas: 1, replicaTimeoutMs: 600_001 }, /'replicaTimeoutMs'.*got number 600001/],
      [{ replicas: 1, replicaTimeoutMs: null }, /'replicaTimeoutMs'.*got null/],
      [{ replicaTimeoutMs: 500 }, /option 'replicaTimeoutMs' \(500\) needs option 'replicas'/],
      [{ replica: 1 }, /unknown option 'replica' \(known: .*replicas, replicaTimeoutMs/],
    ];
    for (const [opts, message] of cases) {
      await expect(producer.publish(stream, { n: 1 }, opts as never)).rejects.toThrow(message);
      await expect(producer.publishMany(stream, [{ n: 1 }], opts as never)).rejects.toThrow(
        TypeError,
      );
    }
    await expect(producer.publish(stream, { n: 1 }, { replicas: -1 })).rejects.toThrow(
      /^StreamProducer\.publish\(\)/,
    );
    expect(await lonelyRedis.exists(stream)).toBe(0);
  });
});

describe('idempotent and durable (idempotent: true with replicas)', () => {
  /** The entry ids of `stream` whose `id` field is `id`. */
  async function entriesWithId(redis: Redis, stream: string, id: string): Promise<string[]> {
    const all = await redis.xrange(stream, '-', '+');
    return all.filter(([, fields]) => fields[1] === id).map(([entryId]) => entryId);
  }

  it('publish: written once, the script and its WAIT on the durable connection; the replica has it the moment it resolves; a repeat answers the first receipt', async () => {
    const producer = await producerOn(master);
    const stream = fresh('idem-durable');
    const waitsBefore = await waitCalls(masterRedis);
    const first = await producer.publish(
      stream,
      { n: 1 },
      { id: 'pay-1', idempotent: true, replicas: 1 },
    );
    expect(await entryIdsOf(replicaRedis, stream)).toEqual([first.entryId]);
    const again = await producer.publish(
      stream,
      { n: 1 },
      { id: 'pay-1', idempotent: true, replicas: 1 },
    );
    expect(again).toEqual(first);
    expect(await entryIdsOf(masterRedis, stream)).toEqual([first.entryId]);
    expect(await waitCalls(masterRedis)).toBe(waitsBefore + 2);
    if (NATIVE) {
      // XADD ... IDMP: the server found the repeat itself, on the master and on the replica
      expect(await masterRedis.exists(`{${stream}}:echo-idem::pay-1`)).toBe(0);
      for (const node of [masterRedis, replicaRedis]) {
        const info = (await node.call('XINFO', 'STREAM', stream)) as unknown[];
        expect(info[info.indexOf('iids-duplicates') + 1]).toBe(1);
      }
    } else {
      expect(await masterRedis.get(`{${stream}}:echo-idem::pay-1`)).toBe(first.entryId);
      // the repeat rewrote its index key with the same value and kept its expiry
      expect(await masterRedis.pttl(`{${stream}}:echo-idem::pay-1`)).toBeGreaterThan(590_000);
    }
    expect(await clientNames(masterRedis)).toContain('echo-stream-publish');
    // 20 racing durable publishes of one id: one entry, one receipt for all
    const raced = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        producer.publish(stream, { i }, { id: 'race', idempotent: true, replicas: 1 }),
      ),
    );
    expect(new Set(raced.map((r) => r.entryId)).size).toBe(1);
    expect(await entriesWithId(masterRedis, stream, 'race')).toEqual([raced[0].entryId]);
    expect(await entriesWithId(replicaRedis, stream, 'race')).toEqual([raced[0].entryId]);
  });

  it("a repeat's WAIT covers the first write, also one another connection made: it waits for a stalled replica to have it", async () => {
    const writer = await producerOn(master); // the first write: idempotent, no WAIT
    const repeater = await producerOn(master); // the repeat: idempotent with replicas
    const stream = fresh('idem-stalled');
    replica.pause(); // SIGSTOP: connected, but acknowledges nothing
    let resumedAt = 0;
    try {
      const first = await writer.publish(stream, { n: 1 }, { id: 'late', idempotent: true });
      const repeat = repeater.publish(
        stream,
        { n: 1 },
        { id: 'late', idempotent: true, replicas: 1, replicaTimeoutMs: 10_000 },
      );
      let settled = false;
      void repeat.finally(() => (settled = true));
      await new Promise((r) => setTimeout(r, 600));
      // a WAIT counting only this connection's own writes (none) would have answered already
      expect(settled).toBe(false);
      resumedAt = Date.now();
      replica.resume();
      await expect(repeat).resolves.toEqual(first);
      expect(Date.now() - resumedAt).toBeLessThan(10_000);
      // the moment the repeat resolves, the replica has the FIRST write
      expect(await entryIdsOf(replicaRedis, stream)).toEqual([first.entryId]);
    } finally {
      if (resumedAt === 0) replica.resume();
    }
    await master.waitReplicas(1);
  });

  it('without enough replicas: EchoStreamReplicationError naming the first write for a repeat; nothing written twice', async () => {
    const producer = await producerOn(lonely);
    const stream = fresh('idem-lonely');
    const first = await producer.publish(stream, { n: 1 }, { id: 'solo', idempotent: true });
    const err = (await producer
      .publish(
        stream,
        { n: 1 },
        { id: 'solo', idempotent: true, replicas: 1, replicaTimeoutMs: 300 },
      )
      .catch((e: unknown) => e)) as EchoStreamReplicationError;
    expect(err).toBeInstanceOf(EchoStreamReplicationError);
    expect(err).toMatchObject({ ids: ['solo'], entryIds: [first.entryId], acknowledged: 0 });
    expect(await entryIdsOf(lonelyRedis, stream)).toEqual([first.entryId]);
  });

  it('publishMany: new ids written, repeats answer their first write, all on the replica when it resolves', async () => {
    const producer = await producerOn(master);
    const stream = fresh('idem-many');
    const [a] = await producer.publishMany(stream, [{ n: 'a' }], { ids: ['a'], idempotent: true });
    const receipts = await producer.publishMany(
      stream,
      [{ n: 'a' }, { n: 'b' }, { n: 'b' }, { n: 'c' }],
      { ids: ['a', 'b', 'b', 'c'], idempotent: true, replicas: 1, replicaTimeoutMs: 2000 },
    );
    expect(receipts[0]).toEqual(a);
    expect(receipts[2]).toEqual(receipts[1]);
    const onMaster = await entryIdsOf(masterRedis, stream);
    expect(onMaster).toEqual([a.entryId, receipts[1].entryId, receipts[3].entryId]);
    expect(await entryIdsOf(replicaRedis, stream)).toEqual(onMaster);

    const lonelyProducer = await producerOn(lonely);
    const other = fresh('idem-many-lonely');
    const err = (await lonelyProducer
      .publishMany(other, [1, 2], {
        ids: ['x', 'y'],
        idempotent: true,
        replicas: 1,
        replicaTimeoutMs: 200,
      })
      .catch((e: unknown) => e)) as EchoStreamReplicationError;
    expect(err).toBeInstanceOf(EchoStreamReplicationError);
    expect(err.entryIds).toEqual(await entryIdsOf(lonelyRedis, other));
    expect(err.message).toContain('the 2 entries ARE written on the master');
  });

  it('the script forgotten by the server (SCRIPT FLUSH): still one pipeline and one WAIT per publish (the text goes with each), written once', async () => {
    const producer = await producerOn(master);
    const stream = fresh('idem-flushed');
    const opts = { idempotent: true, replicas: 1 } as const;
    await producer.publish(stream, { n: 0 }, { ...opts, id: 'warm' });
    await masterRedis.script('FLUSH');
    const waitsBefore = await waitCalls(masterRedis);
    const first = await producer.publish(stream, { n: 1 }, { ...opts, id: 'after-flush' });
    expect(await waitCalls(masterRedis)).toBe(waitsBefore + 1);
    expect(await producer.publish(stream, { n: 1 }, { ...opts, id: 'after-flush' })).toEqual(first);
    expect(await waitCalls(masterRedis)).toBe(waitsBefore + 2);
    expect(await entriesWithId(replicaRedis, stream, 'after-flush')).toEqual([first.entryId]);
  });

  it('the module default producer.idempotent applies to a durable publish too', async () => {
    const producer = await producerOn(master, { producer: { idempotent: true } });
    const stream = fresh('idem-default');
    const first = await producer.publish(stream, { n: 1 }, { id: 'd', replicas: 1 });
    const again = await producer.publish(stream, { n: 1 }, { id: 'd', replicas: 1 });
    expect(again).toEqual(first);
    expect(await entryIdsOf(replicaRedis, stream)).toEqual([first.entryId]);
  });
});
