#!/usr/bin/env node
/**
 * Nest 11 (CommonJS) and Nest 12 (ESM) compatibility check of the PACKED package.
 *
 *   npm run test:compat              # both apps
 *   node test/compat/run.mjs esm-nest12
 *
 * For each app template beside this file it: copies the template into a temp dir, `npm install`s
 * the tarball of `npm pack` plus that Nest major (and reflect-metadata, rxjs, ioredis), type-checks
 * the template's check.cts / check.mts against the installed typings (tsc, moduleResolution nodenext), starts a
 * throw-away redis-server on a free loopback port, runs the app with REDIS_URL pointing at it,
 * publishes `XADD compat-stream * id evt-1 data {"a":1}` with redis-cli once the app says `ready`,
 * and asserts that the app handled exactly that payload, closed and exited 0 on its own (no open
 * handles), and that XPENDING of the group is 0 afterwards. The apps do not install the optional
 * peer prom-client: `prometheus()` must work and the `metrics` option must fail bootstrap with a
 * clear error. Then the app's microservice (microservice.js / .mjs, with that major of the optional
 * peer @nestjs/microservices installed too) loads `nestjs-echo-stream/microservices` the same way
 * (the subpath export, `require` or `import` condition) and runs an `EchoStreamServer` with one
 * `@EventPattern` and one `@MessagePattern` handler; its `EchoStreamClient` (built by
 * `ClientsModule`, `customClass`) emits one event and sends one request: the event must be handled
 * with its payload, the reply must equal what the handler returned, the microservice must close
 * and exit 0 on its own, and XPENDING of both streams must be 0. One line per app; exit 1 on a
 * failure.
 *
 * Needs: a built dist/ (built here when missing), network or a warm npm cache (installs use
 * --prefer-offline), redis-server and redis-cli on PATH. KEEP_COMPAT_TMP=1 keeps the temp dir.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { fileURLToPath } from 'node:url';
import { children, run, runMain, tail } from '../../scripts/lib/child-commands.mjs';
import { startThrowawayRedis } from '../../scripts/lib/throwaway-redis.mjs';
import { serverCommand } from '../../scripts/lib/echo-server.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const APP_TIMEOUT_MS = 60_000;
const EXIT_AFTER_CLOSE_MS = 5_000;
const STREAM = 'compat-stream';
const GROUP = 'compat';

/** The app templates (directories beside this file). */
const APPS = [
  {
    name: 'cjs-nest11',
    nest: '11',
    entry: 'main.js',
    microservice: 'microservice.js',
    kind: 'CommonJS require()',
  },
  {
    name: 'esm-nest12',
    nest: '12',
    entry: 'main.mjs',
    microservice: 'microservice.mjs',
    kind: 'ESM import',
  },
];
/** The microservice's streams (one per pattern), its group, and what it emits and sends. */
const MS = {
  events: 'compat-ms-events',
  quotes: 'compat-ms-quotes',
  group: 'compat-ms',
  event: { sku: 'A-1', qty: 2 },
  request: { n: 21 },
};

let tmpRoot;

function elapsed(since) {
  return `${((Date.now() - since) / 1000).toFixed(1)}s`;
}

/** A throw-away redis-server (no persistence) on a free loopback port, plus redis-cli on it. */
async function startRedis(dir) {
  const server = await startThrowawayRedis({ dir });
  const { cli } = serverCommand();
  return {
    ...server,
    cli: (...args) =>
      run(cli.command, [...cli.args, '-p', String(server.port), ...args]).then((r) =>
        r.stdout.trim(),
      ),
  };
}

/**
 * Runs a script of the app, calls `onReady` once it prints `readyLine`, and collects its output
 * and exit; after `closedLine` it must exit within EXIT_AFTER_CLOSE_MS.
 */
function runScript(entry, dir, redis, { readyLine, closedLine, onReady = async () => {} }) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [entry], {
      cwd: dir,
      env: { ...process.env, REDIS_URL: redis.url, NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let stdout = '';
    let stderr = '';
    let ready = false;
    let closedAt;
    const fail = (why) => {
      child.kill('SIGKILL');
      reject(new Error(`${why}\n--- app output ---\n${tail(stdout + stderr, 40)}`));
    };
    const timer = setTimeout(() => fail(`no exit within ${APP_TIMEOUT_MS} ms`), APP_TIMEOUT_MS);
    let closeTimer;
    child.stdout.on('data', (d) => {
      stdout += d;
      if (!ready && readyLine.test(stdout)) {
        ready = true;
        onReady().catch((err) => fail(err.message));
      }
      if (closedAt === undefined && closedLine.test(stdout)) {
        closedAt = Date.now();
        closeTimer = setTimeout(
          () =>
            fail(
              `${entry} printed '${closedLine.source.replace(/[$^]/g, '')}' but did not exit within ${EXIT_AFTER_CLOSE_MS} ms: open handles after app.close()`,
            ),
          EXIT_AFTER_CLOSE_MS,
        );
      }
    });
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', (err) => fail(err.message));
    child.on('close', (code, signal) => {
      children.delete(child);
      clearTimeout(timer);
      clearTimeout(closeTimer);
      if (code !== 0) return fail(`${entry} exited with ${signal ?? code}`);
      resolve({ stdout, stderr });
    });
  });
}

function readVersion(dir, pkg) {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', pkg, 'package.json'), 'utf8'))
      .version;
  } catch {
    return undefined;
  }
}

async function check(app, tarball) {
  const t0 = Date.now();
  const dir = path.join(tmpRoot, app.name);
  fs.cpSync(path.join(HERE, app.name), dir, { recursive: true });

  const tInstall = Date.now();
  await run(
    'npm',
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
      '--loglevel=error',
      tarball,
      `@nestjs/common@${app.nest}`,
      `@nestjs/core@${app.nest}`,
      `@nestjs/microservices@${app.nest}`,
      'reflect-metadata',
      'rxjs',
      'ioredis',
    ],
    { cwd: dir, env: { ...process.env, NODE_OPTIONS: '' } },
  );
  const installTime = elapsed(tInstall);
  const nestVersion = readVersion(dir, '@nestjs/core');
  if (!nestVersion?.startsWith(`${app.nest}.`)) {
    throw new Error(`expected @nestjs/core ${app.nest}.x, installed ${nestVersion}`);
  }
  const msVersion = readVersion(dir, '@nestjs/microservices');
  if (!msVersion?.startsWith(`${app.nest}.`)) {
    throw new Error(`expected @nestjs/microservices ${app.nest}.x, installed ${msVersion}`);
  }
  // Peer dependencies: the package must use the app's Nest, never a copy of its own.
  const nested = path.join(dir, 'node_modules', 'nestjs-echo-stream', 'node_modules', '@nestjs');
  if (fs.existsSync(nested)) throw new Error(`a second @nestjs copy was installed under ${nested}`);

  const tCheck = Date.now();
  await run(process.execPath, [
    path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
    '-p',
    path.join(dir, 'tsconfig.json'),
    '--typeRoots',
    path.join(ROOT, 'node_modules', '@types'),
    '--types',
    'node',
  ]);
  const checkTime = elapsed(tCheck);

  const redis = await startRedis(path.join(dir, '.redis'));
  try {
    const tRun = Date.now();
    const { stdout } = await runScript(app.entry, dir, redis, {
      readyLine: /^ready /m,
      closedLine: /^closed$/m,
      onReady: () =>
        redis
          .cli('XADD', STREAM, '*', 'id', 'evt-1', 'data', '{"a":1}')
          .catch((err) => Promise.reject(new Error(`XADD failed: ${err.message}`))),
    });
    const runTime = elapsed(tRun);
    const line = stdout.split('\n').find((l) => l.startsWith('handled '));
    if (!line) throw new Error(`no 'handled' line\n${tail(stdout)}`);
    const handled = JSON.parse(line.slice('handled '.length));
    const expected = {
      id: 'evt-1',
      stream: STREAM,
      group: GROUP,
      consumer: 'compat',
      payload: { a: 1 },
      attempts: 1,
      intercepted: true,
    };
    for (const [key, value] of Object.entries(expected)) {
      if (!isDeepStrictEqual(handled[key], value)) {
        throw new Error(
          `handled.${key} = ${JSON.stringify(handled[key])}, expected ${JSON.stringify(value)}`,
        );
      }
    }
    const withoutPromClient = checkWithoutPromClient(dir, stdout);
    const ready = stdout.split('\n').find((l) => l.startsWith('ready '));
    const pending = (await redis.cli('XPENDING', STREAM, GROUP)).split('\n')[0];
    if (pending !== '0') throw new Error(`XPENDING ${STREAM} ${GROUP} = ${pending}, expected 0`);
    const tMs = Date.now();
    const microservice = await checkMicroservice(app, dir, redis);
    return (
      `ok (Nest ${nestVersion}, ${app.kind}, node ${process.version}) ` +
      `loops ${ready.slice(6)}, handled ${handled.id} ${JSON.stringify(handled.payload)} ` +
      `attempts ${handled.attempts}, XPENDING 0, ${withoutPromClient}, exited after close; ` +
      `${microservice} (@nestjs/microservices ${msVersion}); ` +
      `install ${installTime}, tsc ${checkTime}, run ${runTime}, microservice ${elapsed(tMs)}, ` +
      `total ${elapsed(t0)}`
    );
  } finally {
    await redis.stop();
  }
}

/**
 * The app's microservice: `EchoStreamServer` with an `@EventPattern` and a `@MessagePattern`
 * handler, `EchoStreamClient` emitting and sending, from `nestjs-echo-stream/microservices`.
 */
async function checkMicroservice(app, dir, redis) {
  const { stdout } = await runScript(app.microservice, dir, redis, {
    readyLine: /^ms-ready$/m,
    closedLine: /^ms-closed$/m,
  });
  const find = (prefix) => {
    const line = stdout.split('\n').find((l) => l.startsWith(prefix));
    if (!line) throw new Error(`${app.microservice}: no '${prefix}' line\n${tail(stdout)}`);
    return JSON.parse(line.slice(prefix.length));
  };
  const expect = (what, actual, expected) => {
    if (!isDeepStrictEqual(actual, expected))
      throw new Error(
        `${app.microservice}: ${what} = ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`,
      );
  };
  const seen = (pattern, payload) => ({
    payload,
    context: true,
    pattern,
    stream: pattern,
    group: MS.group,
    attempts: 1,
  });
  expect('the event handler saw', find('ms-event '), seen(MS.events, MS.event));
  const returned = find('ms-returned ');
  expect('the request handler returned', returned, {
    price: MS.request.n * 10,
    seen: seen(MS.quotes, MS.request),
  });
  expect('the reply of send()', find('ms-reply '), returned);
  for (const stream of [MS.events, MS.quotes]) {
    const pending = (await redis.cli('XPENDING', stream, MS.group)).split('\n')[0];
    if (pending !== '0') throw new Error(`XPENDING ${stream} ${MS.group} = ${pending}, expected 0`);
  }
  return (
    `microservice: @EventPattern handled ${JSON.stringify(MS.event)}, ` +
    `@MessagePattern reply equal to its return (price ${returned.price}), XPENDING 0 and 0, exited after close`
  );
}

/**
 * The app runs without the optional peer prom-client: `prometheus()` renders the loop's figures,
 * and the `metrics` option fails bootstrap with the error naming the missing peer.
 */
function checkWithoutPromClient(dir, stdout) {
  if (fs.existsSync(path.join(dir, 'node_modules', 'prom-client'))) {
    throw new Error('prom-client got installed: the app must run without the optional peer');
  }
  const find = (prefix) =>
    stdout
      .split('\n')
      .find((l) => l.startsWith(prefix))
      ?.slice(prefix.length);
  const line = JSON.parse(find('prometheus ') ?? 'null');
  const expectedLine = `echo_stream_read_total{stream="${STREAM}",group="${GROUP}",consumer="compat",handler="CompatHandler.handle"} 1`;
  if (line !== expectedLine) {
    throw new Error(`prometheus() read line ${JSON.stringify(line)}, expected ${expectedLine}`);
  }
  const error = find('metrics-option ');
  const expectedError =
    "EchoStreamConfigError: EchoStreamModule: option 'metrics' needs the optional peer " +
    "dependency 'prom-client' (^15), which is not installed: npm install prom-client (or remove the option)";
  if (error !== expectedError) {
    throw new Error(`metrics option without prom-client: ${error}, expected ${expectedError}`);
  }
  return 'prometheus() without prom-client, metrics option refused';
}

function cleanup() {
  for (const child of children) child.kill('SIGKILL');
  if (tmpRoot && !process.env.KEEP_COMPAT_TMP) fs.rmSync(tmpRoot, { recursive: true, force: true });
}

async function main() {
  const t0 = Date.now();
  const wanted = process.argv.slice(2);
  const apps = wanted.length ? APPS.filter((a) => wanted.includes(a.name)) : APPS;
  if (apps.length === 0)
    throw new Error(`unknown app; known: ${APPS.map((a) => a.name).join(', ')}`);

  if (!fs.existsSync(path.join(ROOT, 'dist', 'index.js'))) {
    console.log('compat: dist/ missing, running npm run build');
    await run('npm', ['run', 'build'], { cwd: ROOT });
  }
  tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'echo-stream-compat-'));
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', tmpRoot], {
    cwd: ROOT,
  });
  const [packed] = JSON.parse(stdout);
  const tarball = path.join(tmpRoot, packed.filename);
  console.log(
    `compat: packed ${packed.filename} (${packed.entryCount} files, ${(packed.size / 1024).toFixed(0)} kB) in ${tmpRoot}`,
  );

  const results = await Promise.allSettled(apps.map((app) => check(app, tarball)));
  let failed = 0;
  results.forEach((r, i) => {
    if (r.status === 'fulfilled') console.log(`${apps[i].name}: ${r.value}`);
    else {
      failed++;
      console.log(`${apps[i].name}: FAIL ${r.reason?.message ?? r.reason}`);
    }
  });
  console.log(`compat: took ${elapsed(t0)}`);
  console.log(`compat: ${apps.length - failed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}

runMain('compat', main, cleanup);
