/**
 * The `echo-stream` CLI (the built `dist/cli/main.js`, as `npx echo-stream` runs it) against real
 * redis-servers: each command's `--json` output matches what Redis holds, `redrive` moves dead
 * letters back (copy, then delete), `tail --follow` prints new entries until Ctrl-C, and every
 * error (refused connection, failed AUTH, missing key, WRONGTYPE, bad usage) is one line on stderr
 * with exit code 1.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import type { Redis } from 'ioredis';
import { CLI_BIN as BIN, runCliProcess as cli, type CliRun as Run } from '../support/cli-process';
import { freePort, RedisServer, stopAllRedisServers } from '../support/redis-server';
import { waitFor } from '../support/wait-for';
import { chosenServer } from '../../scripts/lib/echo-server.mjs';

let server: RedisServer;
let redis: Redis;
let n = 0;
const fresh = () => `cli-${process.pid}-${++n}`;

const json = async <T>(args: string[]): Promise<T> => {
  const run = await cli(['--url', server.url, '--json', ...args]);
  expect([run.code, run.stderr]).toEqual([0, '']);
  return JSON.parse(run.stdout) as T;
};

/** A stream with two groups: `billing` holds 2 pending entries, `reporting` never read. */
async function seed(stream: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    ids.push((await redis.xadd(stream, '*', 'id', `e-${i}`, 'data', JSON.stringify({ i })))!);
  }
  await redis.xgroup('CREATE', stream, 'billing', '0');
  await redis.xgroup('CREATE', stream, 'reporting', '0');
  await redis.xreadgroup('GROUP', 'billing', 'worker-1', 'COUNT', 2, 'STREAMS', stream, '>');
  return ids;
}

/** Dead letters as the engine writes them (the `dlq_*` fields plus the original fields). */
async function deadLetter(stream: string, group: string, id: string): Promise<string> {
  return (await redis.xadd(
    `${stream}:dlq`,
    '*',
    'dlq_reason',
    'max_deliveries',
    'dlq_stream',
    stream,
    'dlq_group',
    group,
    'dlq_entry_id',
    '1-1',
    'dlq_attempts',
    '5',
    'dlq_error',
    'card declined',
    'dlq_at',
    new Date().toISOString(),
    'id',
    id,
    'data',
    '{"x":1}',
  ))!;
}

beforeAll(async () => {
  expect(fs.existsSync(BIN)).toBe(true); // npm test builds first (pretest)
  server = await RedisServer.start();
  redis = server.client();
});

afterAll(async () => {
  await stopAllRedisServers();
});

describe('echo-stream CLI commands', () => {
  it('streams: every stream key with its length and number of groups', async () => {
    const stream = fresh();
    await seed(stream);
    await redis.set(`${stream}-not-a-stream`, 'x');
    const list = await json<Array<{ stream: string; length: number; groups: number }>>(['streams']);
    expect(list).toContainEqual({ stream, length: 5, groups: 2 });
    expect(list.map((s) => s.stream)).not.toContain(`${stream}-not-a-stream`);

    const text = await cli(['--url', server.url, 'streams']);
    expect(text.code).toBe(0);
    const lines = text.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^STREAM\s+LENGTH\s+GROUPS$/);
    const row = lines.find((l) => l.startsWith(`${stream} `))!;
    // aligned: the numbers end where their header ends
    expect(row.length).toBe(lines[0].length);
    expect(row).toMatch(/\s5\s+2$/);
  });

  it('inspect: groups, consumers, pending, lag, oldest pending, dead letters', async () => {
    const stream = fresh();
    await seed(stream);
    await deadLetter(stream, 'billing', 'dead-1');
    type Inspect = {
      stream: string;
      length: number;
      groups: Array<{
        group: string;
        pending: number;
        lag: number | null;
        oldestPendingMs: number | null;
        deadLetters: number;
        consumers: Array<{ name: string; pending: number }>;
      }>;
    };
    const view = await json<Inspect>(['inspect', stream]);
    expect(view.length).toBe(5);
    const billing = view.groups.find((g) => g.group === 'billing')!;
    expect(billing).toMatchObject({ pending: 2, lag: 3, deadLetters: 1 });
    expect(billing.consumers).toEqual([expect.objectContaining({ name: 'worker-1', pending: 2 })]);
    expect(billing.oldestPendingMs).toBeGreaterThanOrEqual(0);
    expect(view.groups.find((g) => g.group === 'reporting')).toMatchObject({
      pending: 0,
      lag: 5,
      oldestPendingMs: null,
      consumers: [],
    });
    const text = await cli(['--url', server.url, 'inspect', stream]);
    expect(text.stdout).toContain(`stream ${stream}: 5 entries, 2 group(s)`);
    // the newer server verbs: Redis 8.6 answers all three, the others (the Redis 7 path) none
    expect(text.stdout).toContain(
      chosenServer() === 'redis86'
        ? 'server features: CLAIM, IDMP, XACKDEL (in use: CLAIM, IDMP, XACKDEL)'
        : 'server features: none (the Redis 7 path)',
    );
    expect(text.stdout).toMatch(
      /^GROUP\s+CONSUMERS\s+PENDING\s+LAG\s+OLDEST PENDING\s+DEAD LETTERS$/m,
    );
  });

  it('pending: one page of the PEL, and the next', async () => {
    const stream = fresh();
    const ids = await seed(stream);
    type Page = {
      pending: number;
      next: string | null;
      entries: Array<{ entryId: string; consumer: string; deliveries: number }>;
    };
    const first = await json<Page>(['pending', stream, 'billing', '--count', '1']);
    expect(first).toMatchObject({ pending: 2, next: ids[0] });
    expect(first.entries).toEqual([
      expect.objectContaining({ entryId: ids[0], consumer: 'worker-1', deliveries: 1 }),
    ]);
    const second = await json<Page>([
      'pending',
      stream,
      'billing',
      '--count',
      '1',
      '--after',
      ids[0],
    ]);
    expect(second.entries.map((e) => e.entryId)).toEqual([ids[1]]);
  });

  it('dead-letters and redrive: listed, then moved back (copy, then delete)', async () => {
    const stream = fresh();
    await seed(stream);
    await deadLetter(stream, 'billing', 'dead-1');
    await deadLetter(stream, 'shipping', 'dead-2');
    type Letter = { reason: string; group: string; attempts: number; error: string; id: string };
    const letters = await json<Letter[]>(['dead-letters', stream]);
    expect(letters).toEqual([
      expect.objectContaining({
        reason: 'max_deliveries',
        group: 'billing',
        attempts: 5,
        error: 'card declined',
        id: 'dead-1',
      }),
      expect.objectContaining({ group: 'shipping', id: 'dead-2' }),
    ]);
    expect(await json<Letter[]>(['dead-letters', stream, '--group', 'shipping'])).toHaveLength(1);

    expect(await json(['redrive', stream, '--group', 'billing', '--yes'])).toEqual({
      stream,
      redriven: 1,
    });
    const [last] = await redis.xrevrange(stream, '+', '-', 'COUNT', 1);
    expect(last[1]).toEqual(['id', 'dead-1', 'data', '{"x":1}']);
    expect(await redis.xlen(`${stream}:dlq`)).toBe(1);
    const text = await cli(['--url', server.url, 'redrive', stream, '--yes']);
    expect([text.code, text.stdout]).toEqual([0, `moved 1 dead letter back to ${stream}\n`]);
    expect(await redis.xlen(`${stream}:dlq`)).toBe(0);
    expect(await redis.xlen(stream)).toBe(7);
  });

  it('tail: the newest entries; --follow prints new ones until Ctrl-C', async () => {
    const stream = fresh();
    const ids = await seed(stream);
    const tail = await json<Array<{ entryId: string; fields: Record<string, string> }>>([
      'tail',
      stream,
      '--count',
      '2',
    ]);
    expect(tail).toEqual([
      { entryId: ids[3], fields: { id: 'e-3', data: '{"i":3}' } },
      { entryId: ids[4], fields: { id: 'e-4', data: '{"i":4}' } },
    ]);

    const child = spawn(
      process.execPath,
      [BIN, '--url', server.url, 'tail', stream, '--count', '1', '--follow'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    try {
      await waitFor(() => out.includes(`${ids[4]}  id=e-4`), { message: 'tail prints the newest' });
      const added = await redis.xadd(stream, '*', 'id', 'live-1', 'data', '{}');
      await waitFor(() => out.includes(`${added}  id=live-1 data={}`), {
        message: 'tail --follow prints the new entry',
      });
    } finally {
      child.kill('SIGINT');
    }
    expect(await exited).toBe(0);
  });

  it('history: the entries between two entry ids or times, oldest first, with their raw fields', async () => {
    const stream = fresh();
    const ids = await seed(stream);
    const window = await json<
      Array<{ entryId: string; at: string; fields: Record<string, string> }>
    >(['history', stream, '--from', ids[1], '--to', ids[3]]);
    expect(window.map((e) => e.entryId)).toEqual([ids[1], ids[2], ids[3]]);
    expect(window[0].fields).toEqual({ id: 'e-1', data: '{"i":1}' });
    expect(new Date(window[0].at).getTime()).toBe(Number(ids[1].split('-')[0]));

    const since = new Date(Number(ids[0].split('-')[0])).toISOString();
    const counted = await json<Array<{ entryId: string }>>([
      'history',
      stream,
      '--from',
      since,
      '--count',
      '2',
    ]);
    expect(counted.map((e) => e.entryId)).toEqual([ids[0], ids[1]]);

    const text = await cli(['--url', server.url, 'history', stream, '--from', ids[4]]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`${ids[4]}  `);
    expect(text.stdout).toContain('id=e-4');

    const bad = await cli(['--url', server.url, 'history', stream]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--from');
  });

  it('--help per command, and a clear line for bad usage', async () => {
    const help = await cli(['redrive', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain(
      'Usage: echo-stream [--url <url>] [--json] redrive <stream> [--group g] [--count n] [--dry-run] [--yes]',
    );
    const all = await cli(['--help']);
    expect(all.code).toBe(0);
    for (const command of [
      'streams',
      'inspect',
      'pending',
      'dead-letters',
      'redrive',
      'tail',
      'history',
    ]) {
      expect(all.stdout).toContain(`  ${command}`);
    }
    const bad: Array<[string[], RegExp]> = [
      [['bogus'], /^echo-stream: unknown command 'bogus'/],
      [['tail', 'x', '--count', '-1'], /--count|option/],
      [['tail', 'x', '--count', '1000000'], /--count must be an integer from 1 to 100000/],
      [['pending', 'x'], /expected <stream> <group>/],
      [['streams', '--group', 'g'], /option --group does not apply/],
      [['--nope'], /Unknown option '--nope'/],
    ];
    for (const [args, message] of bad) {
      const run = await cli(['--url', server.url, ...args]);
      expect([args, run.code, run.stdout]).toEqual([args, 1, expect.any(String)]);
      expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(message);
    }
  });
});

describe('echo-stream CLI errors: one line on stderr, exit code 1', () => {
  const oneLine = (run: Run, message: RegExp) => {
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(message);
  };

  it('a refused connection', async () => {
    const port = await freePort();
    oneLine(
      await cli(['--url', `redis://127.0.0.1:${port}`, 'streams']),
      new RegExp(
        `^echo-stream streams: cannot connect to Redis at redis://127.0.0.1:${port}: .*ECONNREFUSED`,
      ),
    );
    // REDIS_URL is the default when --url is absent
    oneLine(await cli(['streams'], { REDIS_URL: `redis://127.0.0.1:${port}` }), /ECONNREFUSED/);
  });

  it('an authentication failure (no password, wrong password), password not echoed', async () => {
    const locked = await RedisServer.start({ password: 's3cret-pw' });
    const url = `redis://127.0.0.1:${locked.port}`;
    oneLine(await cli(['--url', url, 'inspect', 'x']), /NOAUTH|Authentication required/);
    const wrong = await cli(['--url', `redis://:wrong-pw@127.0.0.1:${locked.port}`, 'streams']);
    oneLine(wrong, /refused the credentials: .*WRONGPASS/);
    expect(wrong.stderr).not.toContain('wrong-pw');
    const right = await cli(['--url', locked.url, '--json', 'streams']);
    expect([right.code, right.stdout]).toEqual([0, '[]\n']);
    await locked.stop();
  });

  it('a missing key and a key of another type', async () => {
    const name = fresh();
    // redrive --yes: without a terminal, redrive refuses to run before it connects
    for (const command of ['inspect', 'dead-letters', 'redrive --yes', 'tail']) {
      oneLine(
        await cli(['--url', server.url, ...command.split(' '), name]),
        new RegExp(`no such key '${name}'`),
      );
    }
    await redis.set(name, 'plain');
    for (const command of ['inspect', 'dead-letters', 'redrive --yes', 'tail']) {
      oneLine(
        await cli(['--url', server.url, ...command.split(' '), name]),
        new RegExp(`WRONGTYPE: '${name}' is a string, not a stream`),
      );
    }
    oneLine(await cli(['--url', server.url, 'pending', name, 'g']), /WRONGTYPE/);
    const stream = fresh();
    await seed(stream);
    oneLine(
      await cli(['--url', server.url, 'pending', stream, 'nobody']),
      new RegExp(`stream '${stream}' has no group 'nobody'`),
    );
  });
});
