/**
 * The retention engine's pure parts (floor, entry-id arithmetic) and the steps that are hard to
 * produce on a real server at an exact moment (the lock lost between archive and trim).
 */
import type { ArchivedEntry } from '../../lib';
import { retentionFloor } from '../../lib/lifecycle/retention-floor';
import { RetentionLease } from '../../lib/lifecycle/retention-lease';
import { StreamRetention } from '../../lib/lifecycle/stream-retention';
import { compareEntryIds, nextEntryId } from '../../lib/codec/entry-id';
import type { GroupFloorInfo, LifecycleClient } from '../../lib/redis/operator/lifecycle-client';
import type { RawEntry } from '../../lib/redis/streams-client';

describe('nextEntryId', () => {
  it('is the smallest id after the given one', () => {
    expect(nextEntryId('5-3')).toBe('5-4');
    expect(nextEntryId('0-0')).toBe('0-1');
    expect(nextEntryId('5')).toBe('5-1');
    expect(nextEntryId('5-18446744073709551615')).toBe('6-0');
    expect(compareEntryIds(nextEntryId('1700000000000-9'), '1700000000000-10')).toBe(0);
  });
});

describe('retentionFloor', () => {
  const group = (name: string, lastDeliveredId: string, oldestPendingId: string | null) =>
    ({ name, lastDeliveredId, oldestPendingId }) satisfies GroupFloorInfo;

  it('is the oldest entry any group has not acknowledged: pending or not yet delivered', () => {
    expect(retentionFloor([group('a', '10-0', null)], new Set())).toEqual({
      minId: '10-1',
      group: 'a',
    });
    expect(retentionFloor([group('a', '10-0', '4-2')], new Set())).toEqual({
      minId: '4-2',
      group: 'a',
    });
    const groups = [
      group('fast', '90-0', null),
      group('slow', '50-0', '20-0'),
      group('new', '0-0', null),
    ];
    expect(retentionFloor(groups, new Set())).toEqual({ minId: '0-1', group: 'new' });
    expect(retentionFloor(groups, new Set(['new']))).toEqual({ minId: '20-0', group: 'slow' });
    expect(retentionFloor(groups, new Set(['new', 'slow']))).toEqual({
      minId: '90-1',
      group: 'fast',
    });
  });

  it('is unbounded without (counted) groups', () => {
    expect(retentionFloor([], new Set())).toEqual({ minId: null, group: null });
    expect(retentionFloor([group('a', '1-0', null)], new Set(['a']))).toEqual({
      minId: null,
      group: null,
    });
  });
});

/** A stream in memory behind the LifecycleClient interface; the lock is a plain holder field. */
class MemoryLifecycle implements LifecycleClient {
  entries: RawEntry[] = [];
  holder: string | null = null;
  renewals = 0;
  /** Called before each renewal answers; may steal the lock. */
  onRenew: (n: number) => void = () => undefined;

  constructor(count: number) {
    for (let i = 0; i < count; i++)
      this.entries.push({ entryId: `${i + 1}-0`, fields: ['id', `b${i}`] });
  }
  async groupFloors(): Promise<GroupFloorInfo[]> {
    return [];
  }
  async range(_s: string, start: string, _end: string, count: number): Promise<RawEntry[]> {
    const after = start.startsWith('(') ? start.slice(1) : null;
    return this.entries
      .filter((e) => after === null || compareEntryIds(e.entryId, after) > 0)
      .slice(0, count);
  }
  async length(): Promise<number> {
    return this.entries.length;
  }
  async trimBelow(_s: string, minId: string): Promise<number> {
    const before = this.entries.length;
    this.entries = this.entries.filter((e) => compareEntryIds(e.entryId, minId) >= 0);
    return before - this.entries.length;
  }
  async acquireLock(_k: string, token: string): Promise<boolean> {
    if (this.holder !== null) return false;
    this.holder = token;
    return true;
  }
  async renewLock(_k: string, token: string): Promise<boolean> {
    this.onRenew(++this.renewals);
    return this.holder === token;
  }
  async releaseLock(_k: string, token: string): Promise<void> {
    if (this.holder === token) this.holder = null;
  }
  async consumers(): Promise<never[]> {
    return [];
  }
  async touchConsumer(): Promise<void> {}
  async deleteIdleConsumer(): Promise<'gone'> {
    return 'gone';
  }
  async partitionCount(): Promise<null> {
    return null;
  }
  async partitionOwners(): Promise<never[]> {
    return [];
  }
}

function retentionOver(client: MemoryLifecycle, archive: (entries: ArchivedEntry[]) => void) {
  const warnings: string[] = [];
  /** What each `logger.error` call got: its message and its stack. */
  const errors: Array<[string, string | undefined]> = [];
  const retention = new StreamRetention({
    rule: { stream: 's', maxAgeMs: null, maxLen: 100, ignoreGroups: [] },
    client,
    lease: new RetentionLease(client, 'lock', 'me', 60_000),
    archive: { name: 'Archive.fold', call: archive },
    logger: {
      log: () => undefined,
      warn: (m) => warnings.push(m),
      error: (m, stack) => errors.push([m, stack]),
    },
    pageSize: 1000,
  });
  return { retention, warnings, errors };
}

describe('StreamRetention and its lock', () => {
  it('stops before the trim when the lock was lost during the archive call: the page is not trimmed', async () => {
    const client = new MemoryLifecycle(2100);
    const pages: number[] = [];
    const { retention, warnings } = retentionOver(client, (entries) => {
      pages.push(entries.length);
      // the second page's call outlives the lock: another process takes it meanwhile
      if (pages.length === 2) client.holder = 'someone-else';
    });
    await retention.run();
    expect(pages).toEqual([1000, 1000]);
    expect(client.entries).toHaveLength(1100); // the first page trimmed, the second not
    expect(client.entries[0].entryId).toBe('1001-0');
    expect(retention.report().trimmedTotal).toBe(1000);
    expect(warnings.join('\n')).toMatch(/the lock lock expired during the run/);
  });

  it('does nothing but observe while another process holds the lock', async () => {
    const client = new MemoryLifecycle(500);
    client.holder = 'someone-else';
    const calls: number[] = [];
    const { retention } = retentionOver(client, (entries) => void calls.push(entries.length));
    await retention.run();
    expect(calls).toEqual([]);
    expect(client.entries).toHaveLength(500);
    expect(retention.report()).toMatchObject({
      length: 500,
      oldestEntryId: '1-0',
      trimmedTotal: 0,
    });
  });

  it('logs an archive method that throws a megabyte with its message and its stack cut to 8 KiB', async () => {
    const client = new MemoryLifecycle(200);
    const { retention, errors } = retentionOver(client, () => {
      throw new Error('m'.repeat(1024 * 1024));
    });
    await retention.run();
    expect(client.entries).toHaveLength(200); // nothing trimmed after a failed archive call
    expect(errors).toHaveLength(1);
    const [message, stack] = errors[0];
    expect(message).toMatch(/@StreamArchive Archive\.fold failed on 100 entries of 's'/);
    expect(message).toMatch(/\.\.\. \[cut: \d+ more bytes\]; none of them trimmed/);
    expect(Buffer.byteLength(message, 'utf8')).toBeLessThanOrEqual(8192 + 200);
    expect(Buffer.byteLength(stack ?? '', 'utf8')).toBeLessThanOrEqual(8192);
    expect(stack).toMatch(/^Error: m+\.\.\. \[cut: \d+ more bytes\]\n\s+at /);
  });
});
