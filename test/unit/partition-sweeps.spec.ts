/**
 * The pending probe of a partitioned handler (lib/consumer/partitions/partition-sweeps.ts, docs/partitions.md
 * "Idle cost"): one probe per interval reads the PEL of every owned partition; only a PEL holding
 * an entry idle past `minIdleMs` (or one that cannot be read) makes its loop sweep, woken from its
 * parked read for it; the pace is a plain loop's (quiet: `max(claimIntervalMs, minIdleMs / 2)`).
 * Real Redis (the script): test/e2e/partitions-reads.e2e.spec.ts.
 */
import { jest } from '@jest/globals';
import {
  PartitionSweeps,
  type PartitionSweep,
} from '../../lib/consumer/partitions/partition-sweeps';
import type { PendingProbeRow } from '../../lib/redis/stream-roles';
import { LineLogger } from '../support/loop-context';

const CLAIM_MS = 1000;
const MIN_IDLE_MS = 10_000;

/** Probes that answer from `rows` (absent stream: an empty PEL) and remember every call. */
class FakeProbes {
  readonly calls: Array<{ group: string; streams: string[]; minIdleMs: number }> = [];
  rows = new Map<string, PendingProbeRow>();
  failure: Error | undefined;
  probe(group: string, streams: readonly string[], minIdleMs: number): Promise<PendingProbeRow[]> {
    this.calls.push({ group, streams: [...streams], minIdleMs });
    if (this.failure) return Promise.reject(this.failure);
    return Promise.resolve(streams.map((s) => this.rows.get(s) ?? { pending: 0, idle: false }));
  }
}

function setUp(phase = 0.5) {
  const probes = new FakeProbes();
  const logger = new LineLogger();
  const sweeps = new PartitionSweeps({
    group: 'g',
    where: 'H.handle on s/g',
    logger,
    claimIntervalMs: CLAIM_MS,
    minIdleMs: MIN_IDLE_MS,
    probes,
    phase,
  });
  const woken = new Map<string, number>();
  const join = (stream: string): PartitionSweep =>
    sweeps.join(stream, () => woken.set(stream, (woken.get(stream) ?? 0) + 1));
  return { probes, logger, sweeps, woken, join };
}

beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

describe('PartitionSweeps', () => {
  it('reads every owned PEL in one probe; only a PEL with an idle entry makes its loop sweep, woken for it', async () => {
    const { probes, sweeps, woken, join } = setUp(0.5);
    const [p0, p1, p2] = ['s:p:0', 's:p:1', 's:p:2'].map(join);
    // the first probe falls at the phase of the interval (handlers spread over it)
    await jest.advanceTimersByTimeAsync(CLAIM_MS / 2 - 1);
    expect(probes.calls).toHaveLength(0);
    probes.rows.set('s:p:1', { pending: 2, idle: true });
    probes.rows.set('s:p:2', { pending: 1, idle: false });
    await jest.advanceTimersByTimeAsync(1);
    expect(probes.calls).toEqual([
      { group: 'g', streams: ['s:p:0', 's:p:1', 's:p:2'], minIdleMs: MIN_IDLE_MS },
    ]);
    expect([p0.due(), p1.due(), p2.due()]).toEqual([false, true, false]);
    expect([...woken]).toEqual([['s:p:1', 1]]);
    // due now: its next park ends at once even if the wake missed it
    expect(p1.nextAt).toBeLessThanOrEqual(Date.now());
    p1.swept(2, Date.now());
    expect(p1.due()).toBe(false);
    // a PEL held entries: the next probe one claimIntervalMs later, not the quiet pace
    probes.rows.clear();
    await jest.advanceTimersByTimeAsync(CLAIM_MS - 1);
    expect(probes.calls).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(probes.calls).toHaveLength(2);
    expect(woken.get('s:p:1')).toBe(1);
    sweeps.stop();
  });

  it('a loop found due again is woken once until it swept', async () => {
    const { probes, sweeps, woken, join } = setUp(0);
    const p0 = join('s:p:0');
    probes.rows.set('s:p:0', { pending: 1, idle: true });
    await jest.advanceTimersByTimeAsync(1);
    await jest.advanceTimersByTimeAsync(CLAIM_MS);
    expect(probes.calls).toHaveLength(2);
    expect(woken.get('s:p:0')).toBe(1);
    p0.swept(1, Date.now());
    await jest.advanceTimersByTimeAsync(CLAIM_MS);
    expect(woken.get('s:p:0')).toBe(2);
    sweeps.stop();
  });

  it('quiet (every PEL empty, no read since): the next probe after max(claimIntervalMs, minIdleMs / 2); a read brings back claimIntervalMs', async () => {
    const { probes, sweeps, woken, join } = setUp(0);
    const p0 = join('s:p:0');
    join('s:p:1');
    await jest.advanceTimersByTimeAsync(1);
    expect(probes.calls).toHaveLength(1);
    const quietAt = Date.now();
    await jest.advanceTimersByTimeAsync(MIN_IDLE_MS / 2 - 1);
    expect(probes.calls).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(probes.calls).toHaveLength(2);
    expect(Date.now() - quietAt).toBe(MIN_IDLE_MS / 2);
    // a loop reads entries 100 ms later: the next probe comes claimIntervalMs after that
    await jest.advanceTimersByTimeAsync(100);
    p0.delivered();
    await jest.advanceTimersByTimeAsync(CLAIM_MS - 1);
    expect(probes.calls).toHaveLength(2);
    await jest.advanceTimersByTimeAsync(1);
    expect(probes.calls).toHaveLength(3);
    expect(woken.size).toBe(0);
    // with nothing due, a park of the loop still ends at a finite time (no sweep before a probe)
    expect(Number.isFinite(p0.nextAt)).toBe(true);
    expect(p0.nextAt).toBeGreaterThan(Date.now());
    sweeps.stop();
  });

  it('a PEL the probe cannot read, or a failed probe, makes the loop sweep on its own; a refusal is told once', async () => {
    const { probes, logger, sweeps, woken, join } = setUp(0);
    const [p0, p1] = ['s:p:0', 's:p:1'].map(join);
    probes.rows.set('s:p:1', { pending: null, idle: false });
    await jest.advanceTimersByTimeAsync(1);
    expect([p0.due(), p1.due()]).toEqual([false, true]);
    p1.swept(0, Date.now());
    probes.failure = Object.assign(new Error('NOPERM this user has no permissions'), {
      name: 'ReplyError',
    });
    await jest.advanceTimersByTimeAsync(CLAIM_MS);
    expect([p0.due(), p1.due()]).toEqual([true, true]);
    expect(woken.get('s:p:0')).toBe(1);
    p0.swept(0, Date.now());
    p1.swept(0, Date.now());
    await jest.advanceTimersByTimeAsync(CLAIM_MS);
    expect(probes.calls).toHaveLength(3);
    expect([p0.due(), p1.due()]).toEqual([true, true]);
    const warnings = logger.lines.filter((l) => l.startsWith('warn '));
    expect(warnings).toEqual([
      'warn H.handle on s/g: pending probe failed (NOPERM this user has no permissions); each partition loop sweeps on its own',
    ]);
    sweeps.stop();
  });

  it('a loop that left is probed no more; stop ends the probing', async () => {
    const { probes, sweeps, join } = setUp(0);
    const p0 = join('s:p:0');
    join('s:p:1');
    await jest.advanceTimersByTimeAsync(1);
    p0.leave();
    await jest.advanceTimersByTimeAsync(MIN_IDLE_MS);
    expect(probes.calls.slice(1).every((c) => c.streams.join() === 's:p:1')).toBe(true);
    expect(probes.calls.length).toBeGreaterThan(1);
    sweeps.stop();
    const calls = probes.calls.length;
    await jest.advanceTimersByTimeAsync(MIN_IDLE_MS * 2);
    expect(probes.calls).toHaveLength(calls);
  });
});
