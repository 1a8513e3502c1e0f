/** The dashboard's pure guards: host matching, value cuts, the page budget, the letter merge. */
import { readDeadLetterPage } from '../../lib/dashboard/views/dead-letter-reader';
import {
  DEFAULT_ALLOWED_HOSTS,
  isHostAllowed,
  originRefusal,
  parseAllowedHosts,
  type HostRules,
} from '../../lib/dashboard/http/host-check';
import {
  cutText,
  MAX_PAGE_BYTES,
  PageBudget,
  previewFields,
} from '../../lib/dashboard/views/page-budget';
import type { RawEntry, RedisStreamsClient } from '../../lib/redis/streams-client';

const rules = (entries: string[]): HostRules => {
  const parsed = parseAllowedHosts(entries);
  if (typeof parsed === 'string') throw new Error(parsed);
  return parsed;
};

describe('host check', () => {
  const loopback = rules([...DEFAULT_ALLOWED_HOSTS]);

  it('allows the loopback names on any port, in any case, IPv6 in brackets', () => {
    for (const host of [
      'localhost',
      'localhost:3000',
      'LOCALHOST:1',
      '127.0.0.1:80',
      '[::1]:9',
      '[::1]',
      'localhost.',
    ]) {
      expect([host, isHostAllowed(host, loopback)]).toEqual([host, true]);
    }
  });

  it('refuses other names, look-alikes, a missing or unreadable Host', () => {
    for (const host of [
      undefined,
      '',
      'evil.example',
      'localhost.evil.example',
      'evil.example:3000',
      '127.0.0.2',
      '[::2]:1',
      'localhost:99999',
      'localhost@evil',
      'user@localhost',
      ' ',
    ]) {
      expect([host, isHostAllowed(host, loopback)]).toEqual([host, false]);
    }
  });

  it('host:port pins the port; a bare IPv6 entry is read as bracketed; * allows all', () => {
    const pinned = rules(['dash.example:8443', '::1']);
    expect(isHostAllowed('dash.example:8443', pinned)).toBe(true);
    expect(isHostAllowed('dash.example', pinned)).toBe(false);
    expect(isHostAllowed('dash.example:8444', pinned)).toBe(false);
    expect(isHostAllowed('[::1]:3000', pinned)).toBe(true);
    expect(isHostAllowed('anything:1', rules(['*']))).toBe(true);
    expect(parseAllowedHosts(['*', 'x'])).toMatch(/stands alone/);
    expect(parseAllowedHosts([])).toMatch(/at least one/);
    expect(parseAllowedHosts(['http://x'])).toMatch(/"http:\/\/x" is not a host/);
  });

  it("a mutation's Origin must be allowed and be the request's Host", () => {
    expect(originRefusal('http://localhost:3000', 'localhost:3000', loopback)).toBeUndefined();
    expect(originRefusal('http://LOCALHOST', 'localhost:80', loopback)).toBeUndefined();
    expect(originRefusal(undefined, 'localhost:3000', loopback)).toMatch(/no Origin/);
    expect(originRefusal('null', 'localhost:3000', loopback)).toMatch(/no Origin/);
    expect(originRefusal('::', 'localhost:3000', loopback)).toMatch(/unreadable/);
    expect(originRefusal('http://evil.example:3000', 'evil.example:3000', loopback)).toMatch(
      /not an allowed host/,
    );
    expect(originRefusal('http://127.0.0.1:3000', 'localhost:3000', loopback)).toMatch(
      /not this host/,
    );
    expect(originRefusal('http://localhost:3001', 'localhost:3000', loopback)).toMatch(
      /not this host/,
    );
  });
});

describe('page budget', () => {
  it('cuts at a character boundary and marks the cut', () => {
    expect(cutText('abc', 3)).toEqual({ text: 'abc', cut: false });
    expect(cutText('abcd', 3)).toEqual({ text: 'abc…', cut: true });
    // never half a surrogate pair
    expect(cutText('ab😀', 3)).toEqual({ text: 'ab…', cut: true });
  });

  it('previews megabytes of fields in 200 characters, marked as cut', () => {
    const preview = previewFields(['k', 'v'.repeat(5_000_000), 'other', 'x']);
    expect(preview.cut).toBe(true);
    expect(preview.text).toHaveLength(201);
    expect(previewFields(['a', '1', 'b', '2'])).toEqual({ text: 'a=1 b=2', cut: false });
  });

  it('stops at count or at 1 MiB of JSON, whichever first; next continues', () => {
    const byCount = new PageBudget<{ entryId: string }>(2);
    expect(byCount.add({ entryId: '1-0' })).toBe(true);
    expect(byCount.next).toBeNull();
    expect(byCount.add({ entryId: '2-0' })).toBe(true);
    expect(byCount.add({ entryId: '3-0' })).toBe(false);
    expect(byCount.next).toBe('2-0');

    const bySize = new PageBudget<{ entryId: string; text: string }>(1000);
    const big = 'x'.repeat(100 * 1024);
    let i = 0;
    while (bySize.add({ entryId: `${++i}-0`, text: big }));
    expect(bySize.entries.length).toBe(i - 1);
    expect(Buffer.byteLength(JSON.stringify(bySize.entries))).toBeLessThanOrEqual(MAX_PAGE_BYTES);
    expect(bySize.entries.length).toBeGreaterThan(5);
    expect(bySize.next).toBe(`${i - 1}-0`);
  });
});

describe('readDeadLetterPage over two dead-letter streams', () => {
  const letter = (id: string, stream = 's'): RawEntry => ({
    entryId: id,
    fields: ['id', id, 'dlq_stream', stream, 'dlq_group', 'g', 'dlq_error', 'e'.repeat(20_000)],
  });
  const sinks: Record<string, RawEntry[]> = {
    a: ['1-0', '3-0', '5-0', '7-0'].map((id) => letter(id)),
    b: [letter('2-0'), letter('4-0', 'other'), letter('6-0')],
  };
  const compare = (x: string, y: string) => Number(x.split('-')[0]) - Number(y.split('-')[0]);
  const client = {
    range: async (key: string, start: string, _end: string, count: number) =>
      sinks[key]
        .filter((e) =>
          start === '-'
            ? true
            : start.startsWith('(')
              ? compare(e.entryId, start.slice(1)) > 0
              : compare(e.entryId, start) >= 0,
        )
        .slice(0, count),
  } as unknown as RedisStreamsClient;

  it('merges by id, skips other streams, pages without a gap or a repeat', async () => {
    const seen: string[] = [];
    let after: string | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const scope = { asked: 's', stream: 's', partitions: null };
      const page = await readDeadLetterPage(client, ['a', 'b'], scope, 2, after);
      seen.push(...page.entries.map((e) => e.entryId));
      for (const entry of page.entries) {
        expect(entry.cut).toBe(true);
        expect(entry.error).toHaveLength(8193);
      }
      if (page.next === null) break;
      after = page.next;
    }
    expect(seen).toEqual(['1-0', '2-0', '3-0', '5-0', '6-0', '7-0']);
  });
});
