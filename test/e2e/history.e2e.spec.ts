/**
 * `EchoStreamAdmin.history()` (docs/operations.md, issue 14) on a real Redis: time-travel reads by `Date`
 * and by entry id, inclusive bounds, across XRANGE page boundaries, decoded with the handler's
 * codec, and flat memory over a 300,000-entry stream (1,000,000 with `ECHO_SOAK=1`).
 */
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { EchoStreamAdmin, StreamHandler, type HistoryEntry, type HistoryOptions } from '../../lib';
import { HISTORY_PAGE_SIZE } from '../../lib/lifecycle/history-reader';
import { bootApp, closeApps } from '../support/lifecycle-apps';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { soakOr } from '../support/soak';

const JSON_STREAM = 'history-json';
const FIELDS_STREAM = 'history-fields';
/** Entry i has id `${BASE + floor(i / 10)}-${i % 10}`: ten entries per millisecond. */
const BASE = 1_700_000_000_000;
const COUNT = 3000;
/**
 * Entries of the flat-memory stream: holding 300,000 would keep ~135 MB more than holding the
 * first tenth (~0.5 KB per entry), well past the 50 MB bound; the soak reads 1,000,000.
 */
const BIG = soakOr(300_000, 1_000_000);

let server: RedisServer;
let redis: Redis;
let admin: EchoStreamAdmin;

/** XADDs `count` entries with explicit ids, server-side (one script per 100,000). */
async function fillWithIds(stream: string, count: number, fields: 'json' | 'fields') {
  const script = `
    for i = tonumber(ARGV[1]), tonumber(ARGV[2]) - 1 do
      local id = string.format('%d-%d', tonumber(ARGV[3]) + math.floor(i / 10), i % 10)
      if ARGV[4] == 'json' then
        redis.call('XADD', KEYS[1], id, 'id', 'b' .. i, 'data', '{"i":' .. i .. '}')
      else
        redis.call('XADD', KEYS[1], id, 'id', 'b' .. i, 'n', tostring(i))
      end
    end`;
  for (let from = 0; from < count; from += 100_000) {
    await redis.eval(script, 1, stream, from, Math.min(count, from + 100_000), BASE, fields);
  }
}

function idOf(i: number): string {
  return `${BASE + Math.floor(i / 10)}-${i % 10}`;
}

async function collect<T>(stream: string, options: HistoryOptions): Promise<HistoryEntry<T>[]> {
  const out: HistoryEntry<T>[] = [];
  for await (const entry of admin.history<T>(stream, options)) out.push(entry);
  return out;
}

@Injectable()
class FieldsHandler {
  @StreamHandler(FIELDS_STREAM, 'g', { codec: 'fields', blockMs: 100, startId: '$' })
  handle(): void {}
}

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
  await fillWithIds(JSON_STREAM, COUNT, 'json');
  await fillWithIds(FIELDS_STREAM, 20, 'fields');
  await redis.xadd(JSON_STREAM, `${BASE + 10_000}-0`, 'id', 'broken', 'data', '{not json');
  const booted = await bootApp({ connection: server.url }, [FieldsHandler]);
  admin = booted.app.get(EchoStreamAdmin);
});
afterAll(async () => {
  await closeApps();
  await stopAllRedisServers();
});

describe('EchoStreamAdmin.history()', () => {
  it('reads a Date window, both ends inclusive, across page boundaries', async () => {
    expect(HISTORY_PAGE_SIZE).toBeLessThan(1000); // the window spans several pages
    const from = new Date(BASE + 50);
    const to = new Date(BASE + 149);
    const entries = await collect<{ i: number }>(JSON_STREAM, { from, to });
    expect(entries).toHaveLength(1000); // ms 50..149, ten entries each
    expect(entries.map((e) => e.payload?.i)).toEqual(
      Array.from({ length: 1000 }, (_, k) => 500 + k),
    );
    expect(entries[0]).toEqual({
      entryId: idOf(500),
      id: 'b500',
      payload: { i: 500 },
      fields: { id: 'b500', data: '{"i":500}' },
      at: new Date(BASE + 50),
    });
    expect(entries[999].at).toEqual(to);
  });

  it('reads by entry id, inclusive, and caps with count', async () => {
    const byId = await collect<{ i: number }>(JSON_STREAM, { from: idOf(499), to: idOf(1501) });
    expect(byId.map((e) => e.entryId)).toEqual(
      Array.from({ length: 1003 }, (_, k) => idOf(499 + k)),
    );
    const capped = await collect(JSON_STREAM, { from: idOf(10), count: 600 });
    expect(capped.map((e) => e.entryId)).toEqual(
      Array.from({ length: 600 }, (_, k) => idOf(10 + k)),
    );
    // an ms-only id covers the whole millisecond
    const oneMs = await collect(JSON_STREAM, { from: String(BASE + 7), to: String(BASE + 7) });
    expect(oneMs.map((e) => e.id)).toEqual(Array.from({ length: 10 }, (_, k) => `b${70 + k}`));
    expect(await collect(JSON_STREAM, { count: 0 })).toEqual([]);
  });

  it('without bounds reads everything; an undecodable entry keeps its raw fields', async () => {
    const all = await collect<{ i: number }>(JSON_STREAM, {});
    expect(all).toHaveLength(COUNT + 1);
    const broken = all[all.length - 1];
    expect(broken).toMatchObject({
      id: 'broken',
      payload: undefined,
      fields: { id: 'broken', data: '{not json' },
    });
    expect(broken.decodeError).toMatch(/'data' is not valid JSON/);
  });

  it("decodes with the handler's codec; options.codec overrides it", async () => {
    const [first] = await collect<Record<string, string>>(FIELDS_STREAM, { count: 1 });
    expect(first.payload).toEqual({ n: '0' }); // 'fields' codec of FieldsHandler: no `id`
    const [raw] = await collect(FIELDS_STREAM, { count: 1, codec: 'json' });
    expect(raw.payload).toBeUndefined();
    expect(raw.decodeError).toMatch(/no 'data' field/);
    expect(raw.fields).toEqual({ id: 'b0', n: '0' });
  });

  it('rejects bad bounds with a clear error, reading nothing', async () => {
    await expect(
      collect(JSON_STREAM, { from: new Date(BASE + 100), to: new Date(BASE + 99) }),
    ).rejects.toThrow(
      /EchoStreamAdmin.history\(\): 'from' \(2023-11-14T22:13:20.100Z\) is after 'to' \(2023-11-14T22:13:20.099Z\) on stream 'history-json'/,
    );
    await expect(collect(JSON_STREAM, { from: idOf(20), to: idOf(19) })).rejects.toThrow(
      /is after 'to'/,
    );
    await expect(collect(JSON_STREAM, { from: 'yesterday' })).rejects.toThrow(
      /option 'from' must be a Date or an entry id like '1700000000000-0', got 'yesterday'/,
    );
    await expect(collect(JSON_STREAM, { to: new Date(Number.NaN) })).rejects.toThrow(
      /option 'to' is an invalid Date/,
    );
    await expect(collect(JSON_STREAM, { count: -1 })).rejects.toThrow(
      /option 'count' must be an integer >= 0, got number -1/,
    );
    await expect(collect('', {})).rejects.toThrow(/stream must be a non-empty string/);
    await expect(collect(JSON_STREAM, { form: new Date() } as HistoryOptions)).rejects.toThrow(
      /unknown option 'form' \(known: from, to, count, codec\)/,
    );
  });

  it(`pages lazily: the heap stays flat over a ${BIG.toLocaleString('en')}-entry stream`, async () => {
    const stream = 'history-big';
    await fillWithIds(stream, BIG, 'json');
    // live memory, not RSS: RSS also holds garbage the collector has not returned yet (it moved
    // by 40 to 370 MB between runs); a full collection before each reading leaves what is kept
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const heap: number[] = [];
    const rss: number[] = [];
    let n = 0;
    let sum = 0;
    for await (const entry of admin.history<{ i: number }>(stream)) {
      sum += entry.payload?.i ?? 0;
      n++;
      if (n === BIG / 10 || n === BIG) {
        gc();
        heap.push(process.memoryUsage().heapUsed);
        rss.push(process.memoryUsage().rss);
      }
    }
    expect(n).toBe(BIG);
    expect(sum).toBe(((BIG - 1) * BIG) / 2);
    const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);
    const [heapTenth, heapAll] = heap.map(mb);
    console.log(
      `history heap: ${heapTenth} MB after ${(BIG / 10).toLocaleString('en')} entries, ${heapAll} MB after ${BIG.toLocaleString('en')} (RSS ${mb(rss[0])} -> ${mb(rss[1])} MB)`,
    );
    // ten times the entries read, about the same live memory: holding them would take ~0.5 KB
    // per entry more (135 MB at 300,000, 500 MB at 1,000,000)
    expect(heapAll - heapTenth).toBeLessThan(50);
    await redis.del(stream);
  }, 180_000);
});
