/**
 * The shared reads of an app (lib/consumer/read/shared-read-pool.ts): one parked link per group and slot,
 * open while a loop is in it.
 */
import { SharedReadPool } from '../../lib/consumer/read/shared-read-pool';
import { FakeStreamsClient } from '../support/fake-streams-client';

function setUp(partitionOf: (stream: string) => string = () => '') {
  const clients: FakeStreamsClient[] = [];
  const pool = new SharedReadPool({
    openReadClient: () => {
      const client = new FakeStreamsClient();
      for (const s of ['a', 'b', 'c']) for (const g of ['g1', 'g2']) client.seedGroup(s, g);
      clients.push(client);
      return client;
    },
    partitionOf,
    consumer: 'app-1',
  });
  return { pool, clients };
}

describe('SharedReadPool', () => {
  it('loops of one group share one connection; another group gets its own', async () => {
    const { pool, clients } = setUp();
    const a = pool.reader('g1', 'a');
    const b = pool.reader('g1', 'b');
    pool.reader('g2', 'a');
    expect(clients).toHaveLength(2);
    clients[0].seed('b', ['id', 'x', 'data', '{}']);
    // both wait long: a wait that ends before the round starts (a busy worker) leaves the round
    const [gotA, gotB] = await Promise.all([a.read(10, 5000, 5000), b.read(10, 5000, 5000)]);
    expect(gotA).toEqual([]);
    expect(gotB.map((e) => e.fields?.[1])).toEqual(['x']);
    // one XREADGROUP named both streams, as consumer app-1
    expect(clients[0].callsOf('readGroups')[0].args.slice(0, 1)).toEqual(['g1']);
    expect(clients[0].callsOf('readGroups')[0].args[1]).toBe('app-1');
    expect(clients[0].callsOf('readGroups')[0].args[3]).toEqual(['a', 'b']);
    await pool.close();
  });

  it('on a Cluster, one read per group and hash slot', () => {
    const { pool, clients } = setUp((stream) => (stream === 'c' ? 'slot-9' : 'slot-1'));
    pool.reader('g1', 'a');
    pool.reader('g1', 'b');
    pool.reader('g1', 'c');
    expect(clients).toHaveLength(2);
  });

  it('close closes every shared connection once; a later reader opens a new one', async () => {
    const { pool, clients } = setUp();
    pool.reader('g1', 'a');
    pool.reader('g2', 'a');
    await pool.close();
    expect(clients.map((c) => c.closed)).toEqual([true, true]);
    pool.reader('g1', 'a');
    expect(clients).toHaveLength(3);
  });

  it('the last loop to leave a read closes its connection; a loop of a later partition opens a new one', async () => {
    const { pool, clients } = setUp();
    const a = pool.reader('g1', 'a');
    const b = pool.reader('g1', 'b');
    expect(clients).toHaveLength(1);
    await a.leave();
    expect(clients[0].closed).toBe(false); // b still reads on it
    await b.leave();
    expect(clients[0].closed).toBe(true);
    const again = pool.reader('g1', 'a');
    expect(clients).toHaveLength(2);
    clients[1].seed('a', ['id', 'y', 'data', '{}']);
    expect((await again.read(10, 5000, 5000)).map((e) => e.fields?.[1])).toEqual(['y']);
    await pool.close();
    expect(clients[1].closed).toBe(true);
  });
});
