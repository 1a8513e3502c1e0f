/**
 * The shared read of one group (lib/consumer/read/shared-read.ts) against the in-memory client: each
 * loop gets the entries of its own stream, waits on while others are served, leaves on interrupt,
 * a failed round fails only the loops it is about, and a loop that stops (a partition moved) leaves
 * the read with what its last round got for it. Real Redis: test/e2e/many-handlers,
 * test/e2e/partitions-reads.
 */
import { SharedGroupRead } from '../../lib/consumer/read/shared-read';
import type { RawEntry } from '../../lib/redis/streams-client';
import { FakeStreamsClient } from '../support/fake-streams-client';

const G = 'g';

function setUp(streams: string[]): { fake: FakeStreamsClient; read: SharedGroupRead } {
  const fake = new FakeStreamsClient();
  for (const stream of streams) fake.seedGroup(stream, G);
  const read = new SharedGroupRead({ client: fake, group: G, consumer: 'c1' });
  // every loop joins when it is wired, before any of them reads (as the orchestrator does)
  for (const stream of streams) read.member(stream);
  return { fake, read };
}

/** A reply error as ioredis raises it. */
function replyError(message: string): Error {
  return Object.assign(new Error(message), { name: 'ReplyError' });
}

/** Settles `promise` into a plain outcome, or 'pending' when it has not settled within `ms`. */
async function outcome(promise: Promise<RawEntry[]>, ms = 50): Promise<string> {
  return Promise.race([
    promise.then(
      (entries) => `entries:${entries.map((e) => e.fields?.[1]).join(',')}`,
      (err: Error) => `error:${err.message}`,
    ),
    new Promise<string>((resolve) => setTimeout(() => resolve('pending'), ms)),
  ]);
}

const tick = (ms = 20) => new Promise((resolve) => setTimeout(resolve, ms));

describe('SharedGroupRead', () => {
  it('one XREADGROUP names every waiting stream; each loop gets only its own entries', async () => {
    const { fake, read } = setUp(['a', 'b', 'c']);
    const a = read.member('a').read(10, 5000, 5000);
    const b = read.member('b').read(10, 5000, 5000);
    const c = read.member('c').read(10, 5000, 5000);
    await tick();
    expect(fake.callsOf('readGroups')).toHaveLength(1);
    expect(fake.callsOf('readGroups')[0].args[3]).toEqual(['a', 'b', 'c']);
    fake.seed('b', ['id', 'b-1', 'data', '{}']);
    expect(await outcome(b)).toBe('entries:b-1');
    // a and c wait on, in the next round, without a round of their own
    expect(await outcome(a)).toBe('pending');
    expect(await outcome(c)).toBe('pending');
    const rounds = fake.callsOf('readGroups').slice(1);
    expect(rounds.map((call) => call.args[3])).toEqual([['a', 'c']]);
    fake.seed('a', ['id', 'a-1', 'data', '{}']);
    expect(await outcome(a)).toBe('entries:a-1');
    await read.close();
    expect(await outcome(c)).toBe('entries:');
  });

  it('a read of one loop goes out in the tick it is asked (nothing to gather), and again after each round', async () => {
    const { fake, read } = setUp(['a']);
    const a = read.member('a').read(10, 5000, 5000);
    expect(fake.callsOf('readGroups')).toHaveLength(1);
    fake.seed('a', ['id', 'a-1', 'data', '{}']);
    expect(await outcome(a)).toBe('entries:a-1');
    const again = read.member('a').read(10, 5000, 5000);
    expect(fake.callsOf('readGroups')).toHaveLength(2);
    await read.close();
    expect(await outcome(again)).toBe('entries:');
  });

  it("a round reads COUNT = the smallest batch asked, parks until the nearest deadline, keeps the longest park's reply margin", async () => {
    const { fake, read } = setUp(['a', 'b']);
    const a = read.member('a').read(100, 80, 5000);
    const b = read.member('b').read(7, 5000, 3000);
    await tick(5);
    const [, , count, , block, , marginMs] = fake.callsOf('readGroups')[0].args as [
      string,
      string,
      number,
      string[],
      number,
      number | undefined,
      number,
    ];
    expect(count).toBe(7);
    // a's 80 ms, not b's 3000 ms park nor its 5000 ms wait
    expect(block).toBeGreaterThan(0);
    expect(block).toBeLessThanOrEqual(80);
    // the reply may be as late as a's 5000 ms park allows, not the 1000 ms of an 80 ms one
    expect(marginMs).toBe(5000);
    // a's deadline passes: a alone leaves with nothing, b stays
    expect(await outcome(a, 300)).toBe('entries:');
    expect(await outcome(b)).toBe('pending');
    await read.close();
    await b;
  });

  it("interrupt ends one loop's wait promptly; the others stay in the read", async () => {
    const { fake, read } = setUp(['a', 'b']);
    const a = read.member('a').read(10, 5000, 5000);
    const b = read.member('b').read(10, 5000, 5000);
    await tick();
    const started = Date.now();
    await read.member('a').interrupt(false);
    expect(await outcome(a)).toBe('entries:');
    expect(Date.now() - started).toBeLessThan(500);
    expect(fake.callsOf('interruptRead').length).toBeGreaterThanOrEqual(1);
    expect(await outcome(b)).toBe('pending');
    fake.seed('b', ['id', 'b-1', 'data', '{}']);
    expect(await outcome(b)).toBe('entries:b-1');
    await read.close();
  });

  it('a NOGROUP naming one stream fails that loop only; the others are read again at once', async () => {
    const { fake, read } = setUp(['a', 'b']);
    fake.fail('readGroups', {
      error: replyError(
        "NOGROUP No such key 'b' or consumer group 'g' in XREADGROUP with GROUP option",
      ),
    });
    const a = read.member('a').read(10, 5000, 5000);
    const b = read.member('b').read(10, 5000, 5000);
    expect(await outcome(b)).toMatch(/^error:NOGROUP No such key 'b'/);
    expect(await outcome(a)).toBe('pending');
    fake.seed('a', ['id', 'a-1', 'data', '{}']);
    expect(await outcome(a)).toBe('entries:a-1');
    await read.close();
  });

  it('a reply that names no stream is pinned on its stream by reading each alone once', async () => {
    const { fake, read } = setUp(['a', 'bad', 'c']);
    fake.seed('c', ['id', 'c-1', 'data', '{}']);
    const wrongType = replyError(
      'WRONGTYPE Operation against a key holding the wrong kind of value',
    );
    // the shared round and the lone read of 'bad' fail; the lone reads of a and c succeed
    fake.fail('readGroups', {
      times: 2,
      error: wrongType,
      when: (args) => (args[3] as string[]).includes('bad'),
    });
    const a = read.member('a').read(10, 5000, 5000);
    const bad = read.member('bad').read(10, 5000, 5000);
    const c = read.member('c').read(10, 5000, 5000);
    expect(await outcome(bad)).toMatch(/^error:WRONGTYPE/);
    expect(await outcome(c)).toBe('entries:c-1');
    expect(await outcome(a)).toBe('pending');
    await read.close();
  });

  it('a connection failure fails every loop in the round (each backs off and drains its PEL)', async () => {
    const { fake, read } = setUp(['a', 'b']);
    fake.fail('readGroups', { error: new Error('Connection is closed.') });
    const a = read.member('a').read(10, 5000, 5000);
    const b = read.member('b').read(10, 5000, 5000);
    expect(await outcome(a)).toBe('error:Connection is closed.');
    expect(await outcome(b)).toBe('error:Connection is closed.');
    expect(fake.callsOf('readGroups')).toHaveLength(1);
    await read.close();
  });

  describe('leave (a partition loop that stops)', () => {
    it('a loop waiting between rounds gets nothing and is named by no later round', async () => {
      const { fake, read } = setUp(['a', 'b']);
      const a = read.member('a');
      const b = read.member('b').read(10, 5000, 5000);
      await tick();
      expect(fake.callsOf('readGroups')[0].args[3]).toEqual(['b']);
      // a asks while b's round is parked: it waits for the next round, then stops
      const pending = a.read(10, 5000, 5000);
      await a.leave();
      expect(await outcome(pending)).toBe('entries:');
      fake.seed('b', ['id', 'b-1', 'data', '{}']);
      expect(await outcome(b)).toBe('entries:b-1');
      // a read of a loop that left never goes out; b's next round names b alone
      expect(await outcome(a.read(10, 5000, 5000))).toBe('entries:');
      const again = read.member('b').read(10, 5000, 5000);
      await tick();
      expect(fake.callsOf('readGroups').map((call) => call.args[3])).not.toContainEqual(['a', 'b']);
      expect(fake.callsOf('readGroups').slice(-1)[0].args[3]).toEqual(['b']);
      await read.close();
      await again;
    });

    it('a loop in the round on the wire gets what that round read for it before leave() resolves', async () => {
      const fake = new FakeStreamsClient();
      for (const stream of ['a', 'b']) fake.seedGroup(stream, G);
      const read = new SharedGroupRead({ client: fake, group: G, consumer: 'c1' });
      // the round stays on the wire until the test answers it (entries arriving as it ends)
      let answer: (replies: Map<string, RawEntry[]>) => void = () => undefined;
      fake.overrides.readGroups = () =>
        new Promise<Map<string, RawEntry[]>>((resolve) => (answer = resolve));
      const a = read.member('a');
      const b = read.member('b');
      const aRead = a.read(10, 5000, 5000);
      const bRead = b.read(10, 5000, 5000);
      await tick();
      expect(fake.callsOf('readGroups')[0].args[3]).toEqual(['a', 'b']);
      let left = false;
      const leaving = a.leave().then(() => (left = true));
      await tick();
      // the leave nudged the round, without dropping the connection b still reads on
      expect(fake.callsOf('interruptRead').length).toBeGreaterThanOrEqual(1);
      expect(left).toBe(false);
      const id = fake.seed('a', ['id', 'a-1', 'data', '{}']);
      fake.deliverTo('a', G, 'c1', 1);
      answer(new Map([['a', [{ entryId: id, fields: ['id', 'a-1', 'data', '{}'] }]]]));
      await leaving;
      expect(await outcome(aRead)).toBe('entries:a-1');
      // b stays in the read: the next round names b alone
      expect(await outcome(bRead)).toBe('pending');
      expect(fake.callsOf('readGroups').slice(-1)[0].args[3]).toEqual(['b']);
      answer(new Map());
      await read.close();
      answer(new Map());
      await bRead;
    });

    it("a loop's interrupt at stop never drops the connection while other loops stay in the round", async () => {
      const fake = new FakeStreamsClient();
      for (const stream of ['a', 'b']) fake.seedGroup(stream, G);
      const read = new SharedGroupRead({ client: fake, group: G, consumer: 'c1' });
      let answer: (replies: Map<string, RawEntry[]>) => void = () => undefined;
      fake.overrides.readGroups = () =>
        new Promise<Map<string, RawEntry[]>>((resolve) => (answer = resolve));
      const a = read.member('a');
      const b = read.member('b');
      const aRead = a.read(10, 5000, 5000);
      const bRead = b.read(10, 5000, 5000);
      await tick();
      const mayDrop = () => fake.callsOf('interruptRead').map((call) => call.args[0]);
      void a.interrupt(true); // a's loop stops; b's does not
      await tick(5);
      expect(mayDrop()).toEqual([false]);
      void b.interrupt(true); // now every loop of the round is leaving: a drop hurts no one
      await tick(80);
      expect(mayDrop()).toContain(true);
      answer(new Map());
      expect(await outcome(aRead)).toBe('entries:');
      expect(await outcome(bRead)).toBe('entries:');
      await read.close();
    });

    it('a later loop of the same stream joins anew; the read of one loop goes out at once again', async () => {
      const { fake, read } = setUp(['a', 'b']);
      await read.member('b').leave();
      const first = read.member('a');
      await first.leave();
      expect(read.size).toBe(0);
      const second = read.member('a');
      expect(second).not.toBe(first);
      expect(read.size).toBe(1);
      const got = second.read(10, 5000, 5000);
      // one loop: its round goes out in the tick it asks, nothing to gather
      expect(fake.callsOf('readGroups')).toHaveLength(1);
      fake.seed('a', ['id', 'a-2', 'data', '{}']);
      expect(await outcome(got)).toBe('entries:a-2');
      await read.close();
    });
  });
});

describe('SharedGroupRead: claiming along (CLAIM)', () => {
  it("a round claims along only when every loop in it asks the same minIdleMs (a partition's loop asks none)", async () => {
    const fake = new FakeStreamsClient();
    for (const stream of ['a', 'b', 'p']) fake.seedGroup(stream, G);
    const read = new SharedGroupRead({ client: fake, group: G, consumer: 'c1' });
    const a = read.member('a', 30_000);
    const b = read.member('b', 30_000);
    const p = read.member('p'); // a partition's loop
    const claims = () => fake.callsOf('readGroups').map((call) => [call.args[3], call.args[7]]);
    const both = [a.read(10, 5000, 5000), b.read(10, 5000, 5000)];
    await tick();
    expect(claims()).toEqual([[['a', 'b'], 30_000]]);
    const withPartition = p.read(10, 5000, 5000);
    await tick(80); // the round is woken for p; the next names all three
    expect(claims().at(-1)).toEqual([['a', 'b', 'p'], undefined]);
    await read.close();
    await Promise.all([...both, withPartition]);
  });
});
