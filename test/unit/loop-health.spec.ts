/** The loop's health (lib/consumer/health/loop-health.ts): group, own-PEL drain, backoff streak, state. */
import { jest } from '@jest/globals';
import { LoopHealth } from '../../lib/consumer/health/loop-health';
import { FakeStreamsClient } from '../support/fake-streams-client';
import { G, S, testLoop } from '../support/loop-context';

function setUp() {
  const loop = testLoop({ startId: '0' });
  const fake = new FakeStreamsClient();
  return { loop, fake, health: new LoopHealth(loop.context, fake) };
}

/** Runs `backOff` under fake timers and returns the delay it waited (ms). */
async function backOffDelay(health: LoopHealth, err: unknown): Promise<number> {
  jest.useFakeTimers();
  try {
    const start = Date.now();
    let done = false;
    const waiting = health.backOff(err).then(() => void (done = true));
    await jest.advanceTimersByTimeAsync(0);
    while (!done) await jest.advanceTimersByTimeAsync(50);
    await waiting;
    return Date.now() - start;
  } finally {
    jest.useRealTimers();
  }
}

describe('LoopHealth', () => {
  it('needs its group created at start, and must drain the own PEL first', async () => {
    const { loop, fake, health } = setUp();
    expect(health.mustPrepare).toBe(true);
    expect(health.needsDrain).toBe(true);
    expect(health.needsGroup).toBe(true);
    await health.createGroup();
    expect(health.needsGroup).toBe(false);
    expect(fake.callsOf('createGroup').map((c) => c.args)).toEqual([[S, G, '0']]);
    expect(loop.logger.has(/log Created group orders\/g at 0/)).toBe(true);
    health.drained(health.drainAsked);
    expect(health.mustPrepare).toBe(false);
    health.drainNeeded();
    expect(health.needsDrain).toBe(true);
  });

  it('a drain asked for while one runs is still due after it (an entry it ran left pending again)', () => {
    const { health } = setUp();
    const asked = health.drainAsked; // the drain begins
    health.drainNeeded(); // an entry it ran is left pending again (a commit refused, an XACK lost)
    health.drained(asked); // the drain ends
    expect(health.needsDrain).toBe(true);
    health.drained(health.drainAsked);
    expect(health.needsDrain).toBe(false);
  });

  it('failed beats back off 100, 200, 400 ms, show degraded; the first healthy read ends the streak', async () => {
    const { loop, health } = setUp();
    const delays: number[] = [];
    for (let i = 0; i < 3; i++) delays.push(await backOffDelay(health, new Error('ECONNRESET')));
    expect(delays).toEqual([100, 200, 400]);
    expect(loop.counters.snapshot()).toMatchObject({ state: 'degraded', lastError: 'ECONNRESET' });
    expect(
      loop.logger.has(/error T\.h on orders\/g: Redis error \(ECONNRESET\); retrying in 400 ms/),
    ).toBe(true);
    expect(health.recovering).toBe(true);
    health.beforeRead(false); // nothing answered yet this beat: still degraded
    expect(loop.counters.snapshot().state).toBe('degraded');
    health.beforeRead(true);
    expect(loop.counters.snapshot().state).toBe('running');
    health.healthy();
    expect(health.recovering).toBe(false);
    expect(loop.logger.has(/log T\.h on orders\/g: recovered after 3 failed attempts/)).toBe(true);
    expect(await backOffDelay(health, new Error('again'))).toBe(100);
  });

  it('a lost group is re-created after 100 ms, with a drain, without growing the streak', async () => {
    const { loop, health } = setUp();
    await health.createGroup();
    health.drained(health.drainAsked);
    await backOffDelay(health, new Error('x'));
    expect(await backOffDelay(health, new Error("NOGROUP No such key 'orders'"))).toBe(100);
    expect(health.mustPrepare).toBe(true);
    expect(health.needsGroup).toBe(true);
    expect(health.needsDrain).toBe(true);
    expect(loop.logger.has(/warn .*group or stream is gone .*re-creating it in 100 ms/)).toBe(true);
    expect(await backOffDelay(health, new Error('y'))).toBe(200);
  });

  it('a key of another type is named in the error', async () => {
    const { loop, health } = setUp();
    await backOffDelay(health, new Error('WRONGTYPE Operation against a key'));
    expect(
      loop.logger.has(/key 'orders' holds a value that is not a stream .*left untouched/),
    ).toBe(true);
  });

  it('a reconnect or a stop cuts a backoff short', async () => {
    jest.useFakeTimers();
    try {
      const { loop, health } = setUp();
      for (let i = 0; i < 8; i++) {
        const p = health.backOff(new Error('down'));
        await jest.advanceTimersByTimeAsync(30_000);
        await p;
      }
      let done = false;
      const waiting = health.backOff(new Error('down')).then(() => void (done = true)); // 25.6 s
      await jest.advanceTimersByTimeAsync(1000);
      expect(done).toBe(false);
      health.wake();
      await jest.advanceTimersByTimeAsync(0);
      expect(done).toBe(true);
      await waiting;
      done = false;
      const stopped = health.backOff(new Error('down')).then(() => void (done = true));
      loop.stop();
      await jest.advanceTimersByTimeAsync(0);
      expect(done).toBe(true);
      await stopped;
      health.healthy(); // stopping: the state is the stop's to say
      expect(loop.counters.snapshot().state).toBe('degraded');
    } finally {
      jest.useRealTimers();
    }
  });

  it('a new Cluster slot map ends the backoff and starts the streak over: the next failure waits 100 ms', async () => {
    jest.useFakeTimers();
    try {
      const { loop, health } = setUp();
      health.topologyChanged(); // nothing failed: nothing to say
      expect(loop.logger.has(/slot map changed/)).toBe(false);
      for (let i = 0; i < 5; i++) {
        const p = health.backOff(new Error('down'));
        await jest.advanceTimersByTimeAsync(30_000);
        await p;
      }
      let done = false;
      const waiting = health.backOff(new Error('down')).then(() => void (done = true)); // 3.2 s
      await jest.advanceTimersByTimeAsync(1000);
      expect(done).toBe(false);
      health.topologyChanged();
      await jest.advanceTimersByTimeAsync(0);
      expect(done).toBe(true);
      await waiting;
      expect(health.recovering).toBe(false);
      expect(
        loop.logger.has(
          /log T\.h on orders\/g: the Redis Cluster's slot map changed; retrying now \(after 6 failed attempts\)/,
        ),
      ).toBe(true);
    } finally {
      jest.useRealTimers();
    }
    const { health } = setUp();
    for (let i = 0; i < 4; i++) await backOffDelay(health, new Error('down'));
    health.topologyChanged();
    expect(await backOffDelay(health, new Error('down'))).toBe(100);
  });
});
