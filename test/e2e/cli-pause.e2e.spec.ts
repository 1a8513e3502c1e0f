/**
 * `echo-stream pause|resume <stream> <group>` and the pause in `inspect`, through the built CLI
 * (`dist/cli/main.js`) against a real redis-server: the pause is the key every loop of the group
 * reads (docs/operations.md "Pausing a group"), `inspect` shows it in its text and its --json, a
 * resume removes it, and a typo (no such stream or group) is refused with exit code 1.
 */
import * as fs from 'node:fs';
import type { Redis } from 'ioredis';
import { CLI_BIN, runCliProcess as cli } from '../support/cli-process';
import { RedisServer, stopAllRedisServers } from '../support/redis-server';

let server: RedisServer;
let redis: Redis;
let n = 0;
const fresh = () => `cli-pause-${process.pid}-${++n}`;

beforeAll(async () => {
  expect(fs.existsSync(CLI_BIN)).toBe(true); // npm test builds first (pretest)
  server = await RedisServer.start();
  redis = server.client();
});
afterAll(async () => {
  await stopAllRedisServers();
});

const run = (...args: string[]) => cli(['--url', server.url, ...args]);

type Inspect = { groups: Array<{ group: string; paused: boolean; pausedSince: string | null }> };

it('pause, inspect, resume: the key the loops read, shown by inspect, gone after resume', async () => {
  const stream = fresh();
  await redis.xadd(stream, '*', 'id', 'e1', 'data', '{}');
  await redis.xgroup('CREATE', stream, 'billing', '0');
  await redis.xgroup('CREATE', stream, 'reporting', '0');
  const key = `{${stream}}:echo-paused:billing`;

  const before = Date.now();
  const paused = await run('pause', stream, 'billing');
  expect([paused.code, paused.stderr]).toEqual([0, '']);
  expect(paused.stdout).toBe(`paused group billing on ${stream}\n`);
  expect(Number(await redis.get(key))).toBeGreaterThanOrEqual(before);
  const again = await run('--json', 'pause', stream, 'billing');
  expect(JSON.parse(again.stdout)).toEqual({ stream, group: 'billing', paused: true, was: true });

  const text = await run('inspect', stream);
  expect(text.code).toBe(0);
  expect(text.stdout).toMatch(
    new RegExp(`^group billing is paused since \\d{4}-\\d\\d-\\d\\dT`, 'm'),
  );
  expect(text.stdout).not.toContain('group reporting is paused');
  const view = JSON.parse((await run('--json', 'inspect', stream)).stdout) as Inspect;
  expect(view.groups.find((g) => g.group === 'billing')).toMatchObject({
    paused: true,
    pausedSince: new Date(Number(await redis.get(key))).toISOString(),
  });
  expect(view.groups.find((g) => g.group === 'reporting')).toMatchObject({
    paused: false,
    pausedSince: null,
  });

  const resumed = await run('resume', stream, 'billing');
  expect([resumed.code, resumed.stdout]).toEqual([0, `resumed group billing on ${stream}\n`]);
  expect(await redis.exists(key)).toBe(0);
  const twice = await run('resume', stream, 'billing');
  expect([twice.code, twice.stdout]).toEqual([0, `group billing on ${stream} was not paused\n`]);
  const after = JSON.parse((await run('--json', 'inspect', stream)).stdout) as Inspect;
  expect(after.groups.every((g) => !g.paused)).toBe(true);
});

it('pause refuses a stream or group that does not exist (exit code 1, nothing written)', async () => {
  const stream = fresh();
  const noStream = await run('pause', stream, 'billing');
  expect([noStream.code, noStream.stdout]).toEqual([1, '']);
  expect(noStream.stderr).toContain(`no such key '${stream}'`);
  await redis.xgroup('CREATE', stream, 'billing', '$', 'MKSTREAM');
  const noGroup = await run('pause', stream, 'biling');
  expect([noGroup.code, noGroup.stdout]).toEqual([1, '']);
  expect(noGroup.stderr).toContain(`no group 'biling' on stream '${stream}'`);
  expect(await redis.keys(`*echo-paused*${stream}*`)).toEqual([]);
  expect(await redis.keys(`{${stream}}*`)).toEqual([]);
  const usage = await run('pause', stream);
  expect(usage.code).not.toBe(0);
});
