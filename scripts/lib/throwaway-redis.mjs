/**
 * A throw-away redis-server for the repository's scripts (`npm run demo`, `npm run test:compat`):
 * a free loopback port, no persistence (`--save '' --appendonly no`), its files and `redis.log`
 * in a dir of its own. `stop()` ends it (SIGTERM, SIGKILL after 3 s) and removes the dir if it
 * made it; an exit hook SIGKILLs it (and removes that dir) when the script ends without `stop()`.
 *
 * ECHO_SERVER picks the build (scripts/lib/echo-server.mjs; default the redis-server on PATH, or
 * REDIS_SERVER_BIN). (The jest suites have their own, richer harness:
 * test/support/redis-server.ts.)
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { Redis } from 'ioredis';
import { serverCommand } from './echo-server.mjs';

const HOST = '127.0.0.1';
const START_TIMEOUT_MS = 10_000;
const STOP_GRACE_MS = 3000;
/** A server that exits during start may have lost a race for its port: try another port. */
const START_ATTEMPTS = 3;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A loopback port that was free a moment ago (bind 127.0.0.1:0, read it, close). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, HOST, () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Starts a redis-server and resolves once it answers PING.
 *
 * @param {object} [options]
 * @param {string} [options.dir] where the server keeps its files (made if missing, left in place
 *   by `stop()`); default: a fresh temp dir `<tmpPrefix>XXXXXX`, removed by `stop()`
 * @param {string} [options.tmpPrefix] @default 'echo-stream-redis-'
 * @param {boolean} [options.detached] its own process group, so Ctrl-C in a terminal reaches the
 *   script only (which then stops the server itself) @default false
 * @param {string[]} [options.extraArgs] appended to the command line
 * @returns {Promise<{ port: number, url: string, dir: string, pid: number, stop(): Promise<void> }>}
 */
export async function startThrowawayRedis({
  dir,
  tmpPrefix = 'echo-stream-redis-',
  detached = false,
  extraArgs = [],
} = {}) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce({ dir, tmpPrefix, detached, extraArgs });
    } catch (err) {
      if (!err.exitedDuringStart || attempt === START_ATTEMPTS) throw err;
    }
  }
}

async function startOnce({ dir, tmpPrefix, detached, extraArgs }) {
  const ownDir = dir === undefined;
  const home = ownDir ? fs.mkdtempSync(path.join(os.tmpdir(), tmpPrefix)) : dir;
  fs.mkdirSync(home, { recursive: true });
  const port = await freePort();
  const chosen = serverCommand();
  if (!chosen.available) throw new Error(chosen.reason);
  const bin = chosen.command;
  const child = spawn(
    bin,
    [
      ...chosen.args,
      '--port',
      String(port),
      '--bind',
      HOST,
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      home,
      '--daemonize',
      'no',
      '--logfile',
      path.join(home, 'redis.log'),
      ...extraArgs,
    ],
    { stdio: 'ignore', detached },
  );
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const isRunning = () => child.exitCode === null && child.signalCode === null;
  const removeDir = () => ownDir && fs.rmSync(home, { recursive: true, force: true });
  const killHook = () => {
    if (child.pid !== undefined && isRunning()) child.kill('SIGKILL');
    removeDir();
  };
  process.on('exit', killHook);
  const fail = (err) => {
    killHook();
    process.off('exit', killHook);
    throw err;
  };

  await new Promise((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  }).catch((err) =>
    fail(
      Object.assign(
        new Error(
          err.code === 'ENOENT'
            ? `${bin} not found: install it ('apt-get install -y redis-server') or set REDIS_SERVER_BIN`
            : `${bin}: ${err.message}`,
        ),
        { code: err.code },
      ),
    ),
  );

  const url = `redis://${HOST}:${port}`;
  const probe = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  probe.on('error', () => undefined);
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (!isRunning()) {
      fail(
        Object.assign(
          new Error(`redis-server exited during start (port ${port}; see ${home}/redis.log)`),
          { exitedDuringStart: true },
        ),
      );
    }
    try {
      await probe.connect();
      const pong = await probe.ping();
      probe.disconnect();
      if (pong === 'PONG') break;
    } catch {
      probe.disconnect();
    }
    if (Date.now() > deadline) fail(new Error(`redis-server did not answer PING on port ${port}`));
    await sleep(50);
  }

  return {
    port,
    url,
    dir: home,
    pid: child.pid,
    async stop() {
      if (isRunning()) {
        child.kill('SIGTERM');
        await Promise.race([exited, sleep(STOP_GRACE_MS)]);
      }
      if (isRunning()) {
        child.kill('SIGKILL');
        await Promise.race([exited, sleep(2000)]);
      }
      process.off('exit', killHook);
      removeDir();
    },
  };
}
