/**
 * Cluster redirections under RESP2 and RESP3 (ioredis 6's default): the loop's RedisStreamsClient,
 * on connections opened by the module's factory, reads, acks, claims and inspects a stream while
 * its slot is half migrated (the old master answers ASK) and after (stale slot map: MOVED), and a
 * parked read on a cluster node is woken by CLIENT UNBLOCK.
 */
import type { Cluster, Redis } from 'ioredis';
import { RedisCluster } from '../support/redis-cluster';
import { waitFor } from '../support/wait-for';
import type { RedisServer } from '../support/redis-server';
import { createConnection } from '../../lib/redis/connection/redis-connection.factory';
import { RedisStreamsClient, type RedisConnection } from '../../lib/redis/streams-client';

let cluster: RedisCluster;
let n = 0;

beforeAll(async () => {
  cluster = await RedisCluster.start();
}, 60_000);
afterAll(async () => {
  await cluster.stop();
});

/** A fresh key whose slot `server` owns. */
async function keyOn(server: RedisServer, prefix: string): Promise<string> {
  for (;;) {
    const key = `${prefix}-${process.pid}-${++n}`;
    if ((await cluster.masterFor(key)) === server) return key;
  }
}

async function id(server: Redis): Promise<string> {
  return String(await server.call('CLUSTER', 'MYID'));
}

describe.each([2, 3] as const)('a Cluster client speaking RESP%i', (protocol) => {
  let loop: RedisConnection;
  let control: RedisConnection;
  let client: RedisStreamsClient;

  beforeAll(() => {
    const target = {
      connection: {},
      cluster: { nodes: cluster.nodes, options: { redisOptions: { protocol } } },
    };
    loop = createConnection(target, 'loop', () => undefined);
    control = createConnection(target, 'shared', () => undefined);
    client = new RedisStreamsClient(loop, control, 2000);
  });
  afterAll(async () => {
    await client.close();
    control.disconnect();
  });

  it('speaks the protocol asked for on every node (CLIENT INFO resp=)', async () => {
    await client.length(await keyOn(cluster.servers[0], 'hello')); // connects, learns the slots
    const nodes = (loop as Cluster).nodes('master');
    expect(nodes).toHaveLength(3);
    for (const node of nodes) {
      await node.ping();
      expect(String(await node.call('CLIENT', 'INFO'))).toContain(`resp=${protocol}`);
    }
  });

  it('follows ASK while the slot migrates and MOVED after it moved', async () => {
    const [m0, m1] = cluster.servers;
    const stream = await keyOn(m0, 'redirect');
    expect(await client.createGroup(stream, 'g', '0')).toBe(true);
    const [a, b] = await client.addMany([
      { stream, fields: ['data', '"a"'] },
      { stream, fields: ['data', '"b"'] },
    ]);
    expect((await client.readGroup(stream, 'g', 'c', 10, '>')).map((e) => e.entryId)).toEqual([
      a,
      b,
    ]);

    // half a migration: the key is on m1 already, the slot still belongs to m0 -> m0 answers ASK
    const from = m0.client();
    const to = m1.client();
    const slot = await cluster.keySlot(stream);
    await to.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', await id(from));
    await from.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', await id(to));
    await from.call('MIGRATE', m1.host, m1.port, stream, 0, 5000);
    await expect(from.call('XLEN', stream)).rejects.toThrow(/^ASK /);

    expect(await client.readGroup(stream, 'g', 'c', 10, '0')).toEqual([
      { entryId: a, fields: ['data', '"a"'] },
      { entryId: b, fields: ['data', '"b"'] },
    ]);
    expect(await client.ack(stream, 'g', [a])).toBe(1);
    expect((await client.pending(stream, 'g', { start: '-', end: '+', count: 10 })).length).toBe(1);

    // the move completes; the client's slot map still says m0 -> MOVED
    for (const server of cluster.servers) {
      const direct = server.client();
      await direct.call('CLUSTER', 'SETSLOT', slot, 'NODE', await id(to));
      direct.disconnect();
    }
    await expect(from.call('XLEN', stream)).rejects.toThrow(/^MOVED /);
    const page = await client.autoClaim(stream, 'g', 'c2', 0, '0-0', 10);
    expect(page.entries).toEqual([{ entryId: b, fields: ['data', '"b"'] }]);
    expect(await client.groups(stream)).toEqual([
      { name: 'g', pending: 1, lag: 0, lastDeliveredId: b },
    ]);
    expect(await to.call('XLEN', stream)).toBe(2); // the data lives on m1 now
    from.disconnect();
    to.disconnect();
  });

  it('a durable write (XADD + WAIT pipeline) sent on a stale slot map follows MOVED and writes once', async () => {
    const [, m1, m2] = cluster.servers;
    const stream = await keyOn(m1, 'durable');
    const publish = createConnection(
      {
        connection: {},
        cluster: { nodes: cluster.nodes, options: { redisOptions: { protocol } } },
      },
      'publish',
      () => undefined,
    );
    const durable = new RedisStreamsClient(publish);
    try {
      // learns the slot map; no replica here: WAIT 1 answers 0 after its timeout
      const first = await durable.addReplicated([{ stream, fields: ['data', '"a"'] }], 1, 20);
      expect(first).toMatchObject({ acknowledged: 0 });
      await cluster.moveSlotOf(stream, m2);
      // NOTE: ioredis does not re-send a Cluster pipeline after MOVED when a command of it
      // succeeded, and the keyless WAIT always does: the client sends it again itself
      const second = await durable.addReplicated([{ stream, fields: ['data', '"b"'] }], 1, 20);
      expect(second).toMatchObject({ acknowledged: 0 });
      expect(second.waitError).toBeUndefined();
      const direct = m2.client(); // a plain connection: the entries live on m2 now, b once
      const entries = await direct.xrange(stream, '-', '+');
      expect(entries.map(([entryId]) => entryId)).toEqual([first.entryIds[0], second.entryIds[0]]);
      direct.disconnect();
    } finally {
      await durable.close();
    }
  });

  it('durable writes (XADD + WAIT pipelines) during a half-done slot migration follow ASK and write once', async () => {
    const [m0, m1] = cluster.servers;
    const moved = await keyOn(m0, 'durable-ask'); // migrated already: m0 answers ASK
    const fresh = `{${moved}}-new`; // same slot, on no node yet: m0 answers ASK too
    const publish = createConnection(
      {
        connection: {},
        cluster: { nodes: cluster.nodes, options: { redisOptions: { protocol } } },
      },
      'publish',
      () => undefined,
    );
    const durable = new RedisStreamsClient(publish);
    const from = m0.client();
    const to = m1.client();
    const slot = await cluster.keySlot(moved);
    let ended = false;
    const endMigration = async (): Promise<void> => {
      if (ended) return;
      ended = true;
      for (const server of cluster.servers) {
        const direct = server.client();
        await direct.call('CLUSTER', 'SETSLOT', slot, 'NODE', await id(to));
        direct.disconnect();
      }
    };
    try {
      const first = await durable.addReplicated(
        [{ stream: moved, fields: ['data', '"a"'] }],
        1,
        20,
      );
      await to.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', await id(from));
      await from.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', await id(to));
      await from.call('MIGRATE', m1.host, m1.port, moved, 0, 5000);
      await expect(from.call('XLEN', moved)).rejects.toThrow(/^ASK /);

      // no replica here: WAIT 1 answers 0 after its timeout, on the node that wrote
      const one = await durable.addReplicated([{ stream: moved, fields: ['data', '"b"'] }], 1, 20);
      expect(one).toMatchObject({ acknowledged: 0 });
      expect(one.waitError).toBeUndefined();
      const three = await durable.addReplicated(
        ['c', 'd', 'e'].map((x) => ({ stream: x === 'd' ? fresh : moved, fields: ['data', x] })),
        1,
        20,
      );
      expect(three.entryIds).toHaveLength(3);
      expect(three.waitError).toBeUndefined();

      // every entry once, on the importing node (read once the migration ended); none on m0
      expect(await from.call('CLUSTER', 'COUNTKEYSINSLOT', slot)).toBe(0);
      await endMigration();
      expect((await to.xrange(moved, '-', '+')).map(([entryId]) => entryId)).toEqual([
        first.entryIds[0],
        one.entryIds[0],
        three.entryIds[0],
        three.entryIds[2],
      ]);
      expect((await to.xrange(fresh, '-', '+')).map(([entryId]) => entryId)).toEqual([
        three.entryIds[1],
      ]);
    } finally {
      await endMigration();
      from.disconnect();
      to.disconnect();
      await durable.close();
    }
  });

  it('CLIENT UNBLOCK on the node wakes a parked read with no entries', async () => {
    const stream = await keyOn(cluster.servers[2], 'parked');
    await client.createGroup(stream, 'g', '$');
    const started = Date.now();
    const parked = client.readGroup(stream, 'g', 'c', 10, '>', 5000);
    await new Promise((r) => setTimeout(r, 150));
    await client.interruptRead();
    expect(await parked).toEqual([]);
    expect(Date.now() - started).toBeLessThan(4000); // woken, not timed out at 5 s
  });
});

describe('the topology watch of a Cluster client (onTopologyChange)', () => {
  it('tells when a slot moved (the MOVED refresh), not on refreshes that change nothing', async () => {
    const [m0, , m2] = cluster.servers;
    const loop = createConnection(
      { connection: {}, cluster: { nodes: cluster.nodes } },
      'loop',
      () => undefined,
    );
    const client = new RedisStreamsClient(loop);
    try {
      const stream = await keyOn(m0, 'watched');
      await client.length(stream); // connected, the slot map known
      let changes = 0;
      client.onTopologyChange(() => changes++);
      await new Promise<void>((resolve) => (loop as Cluster).refreshSlotsCache(() => resolve()));
      expect(changes).toBe(0); // the same map
      await cluster.moveSlotOf(stream, m2);
      expect(await client.length(stream)).toBe(0); // MOVED: ioredis refreshes the map
      await waitFor(() => changes === 1, { timeoutMs: 3000, message: 'the change told' });
    } finally {
      await client.close();
    }
  });
});
