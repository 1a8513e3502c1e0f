/**
 * The `echo-stream` CLI (the built `dist/cli/main.js`) on a partitioned stream by its own name
 * (docs/partitions.md "Visible"), against a real redis-server: `streams` lists it once with its
 * partition count (not its partitions' keys), `pending <stream> <group>` merges its partitions'
 * PELs oldest first and `tail <stream>` its entries, each row with its partition (an id held by
 * two partitions is two rows, in partition order); `--after <entry id>@<partition>` pages the PEL
 * without a gap or a repeat, a wrong cursor is one line and exit code 1; `tail --follow` prints
 * new entries of every partition; what an entry holds is printed escaped.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import type { Redis } from 'ioredis';
import { partitionCountKeyOf } from '../../lib/redis/package-keys';
import { CLI_BIN as BIN, runCliProcess as cli } from '../support/cli-process';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';
import { waitFor } from '../support/wait-for';

let server: RedisServer;
let redis: Redis;
let n = 0;
const fresh = () => `clip-${process.pid}-${++n}`;

const json = async <T>(args: string[]): Promise<T> => {
  const run = await cli(['--url', server.url, '--json', ...args]);
  expect([run.code, run.stderr]).toEqual([0, '']);
  return JSON.parse(run.stdout) as T;
};

beforeAll(async () => {
  expect(fs.existsSync(BIN)).toBe(true); // npm test builds first (pretest)
  server = await RedisServer.start();
  redis = server.client();
});
afterAll(async () => {
  redis.disconnect();
  await stopAllRedisServers();
});

/** The merged PEL of {@link seed}, oldest first, as `<id>@<partition>`. */
const PEL = ['1000-0@0', '1000-0@1', '1001-0@2', '1002-0@0', '1003-0@1', '1004-0@2', '1005-0@0'];

/**
 * A partitioned stream of 3 partitions written by hand (ids chosen): `1000-0` is in partitions
 * 0 and 1; group billing read all of it (c1 partitions 0 and 2, c2 partition 1); `1003-0` of
 * partition 1 carries a right-to-left override and a newline.
 */
async function seed(stream: string): Promise<void> {
  await redis.set(partitionCountKeyOf(stream), '3');
  for (const row of PEL) {
    const [id, p] = row.split('@');
    const note = row === '1003-0@1' ? ['note', 'x\u202Eexe.txt\nforged 1-0 line'] : [];
    await redis.xadd(`${stream}:p:${p}`, id, 'n', row, ...note);
  }
  for (const p of [0, 1, 2]) {
    const key = `${stream}:p:${p}`;
    await redis.xgroup('CREATE', key, 'billing', '0');
    await redis.xreadgroup('GROUP', 'billing', p === 1 ? 'c2' : 'c1', 'STREAMS', key, '>');
  }
}

type PendingJson = {
  pending: number;
  partitions: number;
  entries: Array<{ entryId: string; partition: number; consumer: string; deliveries: number }>;
  next: string | null;
};

describe('echo-stream on a partitioned stream by its own name', () => {
  it('streams: the partitioned stream once, with its partition count, length and groups', async () => {
    const stream = fresh();
    await seed(stream);
    const plain = fresh();
    await redis.xadd(plain, '*', 'a', 'b');
    const list = await json<Array<{ stream: string }>>(['streams']);
    expect(list).toContainEqual({ stream, length: 7, groups: 1, partitions: 3 });
    // a plain stream's row as before
    expect(list).toContainEqual({ stream: plain, length: 1, groups: 0 });
    expect(list.filter((s) => s.stream.startsWith(`${stream}:`))).toEqual([]);
    const text = (await cli(['--url', server.url, 'streams'])).stdout.trimEnd().split('\n');
    expect(text[0]).toMatch(/^STREAM\s+LENGTH\s+GROUPS\s+PARTITIONS$/);
    expect(text.find((l) => l.startsWith(`${stream} `))).toMatch(/\s7\s+1\s+3$/);
    expect(text.find((l) => l.startsWith(`${plain} `))).toMatch(/\s1\s+0\s+-$/);
  });

  it('pending: the partitions merged oldest first with their partition; --after <id>@<partition> pages them', async () => {
    // about a dozen CLI processes, seconds each on a loaded machine
    const stream = fresh();
    await seed(stream);
    const all = await json<PendingJson>(['pending', stream, 'billing']);
    expect([all.pending, all.partitions, all.next]).toEqual([7, 3, null]);
    expect(all.entries.map((e) => `${e.entryId}@${e.partition}`)).toEqual(PEL);
    expect(all.entries.map((e) => e.consumer)).toEqual(
      all.entries.map((e) => (e.partition === 1 ? 'c2' : 'c1')),
    );
    // pages of 3 walk the same list; a page of 1 after 1000-0@0 is the same id of partition 1
    const page = (count: string, after: string | null) =>
      json<PendingJson>([
        'pending',
        stream,
        'billing',
        '--count',
        count,
        ...(after === null ? [] : ['--after', after]),
      ]);
    const walked: string[] = [];
    let after: string | null = null;
    for (let pages = 0; pages < 5; pages++) {
      const got: PendingJson = await page('3', after);
      walked.push(...got.entries.map((e) => `${e.entryId}@${e.partition}`));
      after = got.next;
      if (after === null || got.entries.length === 0) break;
    }
    expect(walked).toEqual(PEL);
    const tie = await page('1', '1000-0@0');
    expect([tie.entries.map((e) => `${e.entryId}@${e.partition}`), tie.next]).toEqual([
      ['1000-0@1'],
      '1000-0@1',
    ]);
    const text = await cli(['--url', server.url, 'pending', stream, 'billing', '--count', '2']);
    const lines = text.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`7 pending in ${stream}/billing (3 partitions)`);
    expect(lines[1]).toMatch(/^ENTRY\s+PARTITION\s+CONSUMER\s+IDLE\s+DELIVERIES$/);
    expect(lines[2]).toMatch(/^1000-0\s+0\s+c1\s/);
    expect(lines[3]).toMatch(/^1000-0\s+1\s+c2\s/);
    expect(lines[4]).toBe('next page: --after 1000-0@1');

    for (const after of ['1000-0', '1000-0@3', 'x\u202E@1']) {
      const run = await cli(['--url', server.url, 'pending', stream, 'billing', '--after', after]);
      expect([after, run.code, run.stdout]).toEqual([after, 1, '']);
      expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(/--after/);
      expect(run.stderr).not.toContain('\u202E');
    }
    const unknown = await cli(['--url', server.url, 'pending', stream, 'nope']);
    expect([unknown.code, unknown.stderr.trim()]).toEqual([
      1,
      `echo-stream pending: stream '${stream}' has no group 'nope'`,
    ]);
  }, 120_000);

  it('tail: the newest across the partitions with their partition, escaped; --follow prints new ones of every partition', async () => {
    const stream = fresh();
    await seed(stream);
    const tail = await json<Array<{ entryId: string; partition: number }>>([
      'tail',
      stream,
      '--count',
      '6',
    ]);
    // the newest 6 of the 7, oldest of them first: 1000-0 of partition 0 is the one left out
    expect(tail.map((e) => `${e.entryId}@${e.partition}`)).toEqual(PEL.slice(1));
    const text = (await cli(['--url', server.url, 'tail', stream, '--count', '3'])).stdout;
    expect(text.trimEnd().split('\n')).toEqual([
      '1003-0  p1  n=1003-0@1 note=x\\u202Eexe.txt\\u000Aforged 1-0 line',
      '1004-0  p2  n=1004-0@2',
      '1005-0  p0  n=1005-0@0',
    ]);

    const child = spawn(
      process.execPath,
      [BIN, '--url', server.url, 'tail', stream, '--count', '1', '--follow'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    try {
      await waitFor(() => out.includes('1005-0  p0  n=1005-0@0'), { message: 'the newest' });
      const first = await redis.xadd(`${stream}:p:2`, '*', 'n', 'live-2');
      // one millisecond later: two entries of the same millisecond in two partitions tie, and
      // the merge orders a tie by partition
      const later = `${Number(first!.split('-')[0]) + 1}-0`;
      const second = await redis.xadd(`${stream}:p:1`, later, 'n', 'live-1');
      await waitFor(() => out.includes(`${second}  p1  n=live-1`), {
        message: 'tail --follow prints the new entries of partitions 2 and 1',
      });
      expect(out.trimEnd().split('\n')).toEqual([
        '1005-0  p0  n=1005-0@0',
        `${first}  p2  n=live-2`,
        `${second}  p1  n=live-1`,
      ]);
    } finally {
      child.kill('SIGINT');
    }
    expect(await exited).toBe(0);
  });
});
