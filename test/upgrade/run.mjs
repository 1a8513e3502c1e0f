#!/usr/bin/env node
/**
 * Upgrade test: a rolling deploy from the previous release (v0.1.0) to the current package, on
 * the entries, pending entries, dead letters and partitions the previous release wrote.
 *
 *   node test/upgrade/run.mjs
 *
 * 1. The old package: `v0.1.0` (else commit ad83072) is `git archive`d into a temp dir, installed
 *    from its own lockfile (`npm ci --prefer-offline --ignore-scripts`), built with its own
 *    `npm run build` and packed; the current package is packed from dist/ (built when missing).
 *    Nothing is cached in the repository.
 * 2. Two temp apps, test/upgrade/app copied twice: one with the old tarball, one with the new,
 *    both with the same exact versions of Nest 11, reflect-metadata, rxjs and ioredis (the new app
 *    is installed first, the old one pinned to what it got). Each app is a consumer process
 *    (handlers on a plain stream and on a partitioned stream of 4 partitions, group `g`), a
 *    one-shot producer and a one-shot admin (app/main.js says what each does and records).
 * 3. On a throw-away redis-server: two OLD consumers; the OLD producer publishes a batch to both
 *    streams (some entries fail on every delivery: dead letters written by the old version);
 *    one old consumer is SIGKILLed with entries in hand (its pending entries and partition leases
 *    stay behind, recorded right after the kill); two NEW consumers start beside the other old
 *    one (a mixed group); the NEW producer publishes more; the old consumer is stopped with
 *    SIGTERM (the end of the rolling deploy); then everything drains. The failing entries are
 *    healed, the NEW EchoStreamAdmin lists every dead letter (the old ones too) and redrives them,
 *    and a new consumer handles each.
 * 4. The checks (what failed is printed, exit 1; what at-least-once permits: above `verify()`):
 *    every published entry that does not fail was handled; a second handling only replays an
 *    entry the killed process had in its PEL at the kill (or, v0.1.0's own stop defect, an entry
 *    an old process left unacked at a partition hand-over: V010_HANDOVER, counted in the output);
 *    per key, each process handles in seq order and the seq never goes back but for such a
 *    replay; every failing entry is in the dead-letter stream once (twice only from the killed
 *    process's PEL), letters of v0.1.0's form among them, none of a good entry; the new
 *    admin lists every letter and redrives them all; each redriven copy is handled by a new
 *    process (in its key's partition); the dead-letter streams are empty and every group has
 *    pending 0 and lag 0 at the end; the old consumer's SIGTERM and the new ones' end in exit 0.
 *    The scenario checks itself too: the killed process held entries and leases, the streams
 *    were not drained then, the old consumer handled new entries and the new ones old entries.
 *
 * 40-80 s on a 2-core machine: 30-55 s to build and install (the old package's npm ci 16-33 s
 * and build 7-13 s, beside the new app's install), 11-12 s of scenario, a few seconds to remove
 * the temp dir. The old package gets its own `npm ci` from its own lockfile: reusing the
 * repository's node_modules would save that, but builds the old code with whatever the current
 * lockfile holds once the two differ.
 *
 * Needs: git, network or a warm npm cache, redis-server on PATH (or ECHO_SERVER, see
 * scripts/lib/echo-server.mjs). KEEP_UPGRADE_TMP=1 keeps the temp dir.
 * UPGRADE_BREAK=<name> runs a deliberately broken variant, to see the test fail (never in CI):
 *   old-fields      the old package is built with its payload field renamed (`data` -> `body`),
 *                   as if the wire format had changed between the versions
 *   old-lease-keys  the old package is built with its partition lease and member keys renamed,
 *                   as if the lease keys had changed: old and new processes own partitions apart
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import {
  PLAIN,
  PART,
  GROUP,
  PARTITIONS,
  PARTITION_STREAMS,
  OLD_PLAIN,
  NEW_PLAIN,
  KEYS,
  OLD_SEQS,
  NEW_SEQS,
  partFails,
  NAMES,
  KILLED,
  KILL_AFTER,
  payloadOf,
} from './layout.mjs';
import { verify } from './verify.mjs';
import { children, run, runMain, tail } from '../../scripts/lib/child-commands.mjs';
import { startThrowawayRedis } from '../../scripts/lib/throwaway-redis.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const OLD_REFS = ['v0.1.0', 'ad83072'];

const BREAKS = ['old-fields', 'old-lease-keys'];
const BREAK = process.env.UPGRADE_BREAK || undefined;

let tmpRoot;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const secs = (ms) => `${(ms / 1000).toFixed(1)}s`;

function log(line) {
  console.log(`upgrade: ${line}`);
}

/** Times a step: resolves to its value, and records its duration under `name`. */
const timings = {};
async function timed(name, fn) {
  const t0 = Date.now();
  try {
    return await fn();
  } finally {
    timings[name] = Date.now() - t0;
  }
}

// ---------------------------------------------------------------------------------------------
// 1. the two packages

/** The commit of the previous release: the tag, else the commit; a clear error when neither. */
async function oldCommit() {
  for (const ref of OLD_REFS) {
    try {
      const { stdout } = await run('git', ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], {
        cwd: ROOT,
      });
      return { ref, commit: stdout.trim() };
    } catch {
      // try the next
    }
  }
  throw new Error(
    `neither ${OLD_REFS.join(' nor ')} is a commit of this repository: tag the previous release ` +
      `(git tag v0.1.0 ad83072) or fetch its history (a shallow clone lacks it)`,
  );
}

/** The build of the old release as a tarball: archive, npm ci with its lockfile, build, pack. */
async function packOld({ commit }) {
  const src = path.join(tmpRoot, 'old-src');
  fs.mkdirSync(src);
  const tar = path.join(tmpRoot, 'old-src.tar');
  await timed('old: git archive', async () => {
    await run('git', ['archive', '--format=tar', '-o', tar, commit], { cwd: ROOT });
    await run('tar', ['-xf', tar, '-C', src]);
    fs.rmSync(tar);
  });
  if (BREAK) breakOldSource(src);
  const env = { ...process.env, NODE_OPTIONS: '' };
  await timed('old: npm ci', () =>
    run(
      'npm',
      ['ci', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'],
      {
        cwd: src,
        env,
      },
    ),
  );
  await timed('old: npm run build', () => run('npm', ['run', 'build'], { cwd: src, env }));
  return timed('old: npm pack', () => pack(src, path.join(tmpRoot, 'old-pack')));
}

/** The deliberately broken variants (UPGRADE_BREAK): the old source edited before its build. */
function breakOldSource(src) {
  const edit = (file, from, to) => {
    const full = path.join(src, file);
    const text = fs.readFileSync(full, 'utf8');
    if (!text.includes(from)) throw new Error(`UPGRADE_BREAK=${BREAK}: '${from}' not in ${file}`);
    fs.writeFileSync(full, text.split(from).join(to));
  };
  if (BREAK === 'old-fields') {
    edit(
      'lib/codec/codecs.ts',
      "export const DATA_FIELD = 'data';",
      "export const DATA_FIELD = 'body';",
    );
  } else if (BREAK === 'old-lease-keys') {
    edit('lib/redis/partition-leases.ts', ':echo-leases:', ':echo-leases-v0:');
    edit('lib/redis/partition-leases.ts', ':echo-members:', ':echo-members-v0:');
  }
  log(`UPGRADE_BREAK=${BREAK}: the old source is edited before its build (a broken variant)`);
}

/** The current package as a tarball (dist/ built first when missing). */
async function packNew() {
  if (!fs.existsSync(path.join(ROOT, 'dist', 'index.js'))) {
    log('dist/ missing, running npm run build');
    await timed('new: npm run build', () => run('npm', ['run', 'build'], { cwd: ROOT }));
  }
  return timed('new: npm pack', () => pack(ROOT, path.join(tmpRoot, 'new-pack')));
}

async function pack(dir, dest) {
  fs.mkdirSync(dest);
  const { stdout } = await run(
    'npm',
    ['pack', '--json', '--ignore-scripts', '--loglevel=error', '--pack-destination', dest],
    { cwd: dir },
  );
  const [packed] = JSON.parse(stdout);
  return { file: path.join(dest, packed.filename), integrity: packed.integrity, packed };
}

/** An app dir: app/ copied, the tarball and `deps` installed. */
async function installApp(name, tarball, deps) {
  const dir = path.join(tmpRoot, name);
  fs.cpSync(path.join(HERE, 'app'), dir, { recursive: true });
  await timed(`${name}: npm install`, () =>
    run(
      'npm',
      [
        'install',
        '--no-audit',
        '--no-fund',
        '--prefer-offline',
        '--loglevel=error',
        tarball.file,
        ...deps,
      ],
      { cwd: dir, env: { ...process.env, NODE_OPTIONS: '' } },
    ),
  );
  // the app runs the tarball it was given: the integrity its lockfile records is the pack's
  const lock = JSON.parse(fs.readFileSync(path.join(dir, 'package-lock.json'), 'utf8'));
  const installed = lock.packages?.['node_modules/nestjs-echo-stream']?.integrity;
  if (installed !== tarball.integrity) {
    throw new Error(
      `${name}: installed nestjs-echo-stream ${installed}, expected the tarball's ${tarball.integrity}`,
    );
  }
  const nested = path.join(dir, 'node_modules', 'nestjs-echo-stream', 'node_modules', '@nestjs');
  if (fs.existsSync(nested)) throw new Error(`${name}: a second @nestjs copy under ${nested}`);
  return dir;
}

const APP_DEPS = ['@nestjs/common', '@nestjs/core', 'reflect-metadata', 'rxjs', 'ioredis'];

function installedVersion(dir, pkg) {
  return JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', pkg, 'package.json'), 'utf8'))
    .version;
}

async function prepare() {
  const old = await oldCommit();
  log(`previous release: ${old.ref} = ${old.commit.slice(0, 12)}`);
  const [oldTar, { newTar, newApp, pins }] = await Promise.all([
    timed('old package (archive + ci + build + pack)', () => packOld(old)),
    (async () => {
      const newTar = await packNew();
      const newApp = await installApp('new-app', newTar, [
        '@nestjs/common@11',
        '@nestjs/core@11',
        'reflect-metadata',
        'rxjs',
        'ioredis',
      ]);
      const pins = APP_DEPS.map((d) => `${d}@${installedVersion(newApp, d)}`);
      return { newTar, newApp, pins };
    })(),
  ]);
  if (oldTar.integrity === newTar.integrity)
    throw new Error('the old and the new tarball are the same');
  const oldApp = await installApp('old-app', oldTar, pins);
  for (const d of APP_DEPS) {
    const [o, n] = [installedVersion(oldApp, d), installedVersion(newApp, d)];
    if (o !== n) throw new Error(`${d}: old app has ${o}, new app ${n}`);
  }
  log(`apps: ${pins.join(', ')} in both`);
  return { oldApp, newApp };
}

// ---------------------------------------------------------------------------------------------
// 2. processes

/** A child process of an app dir, its stdout read line by line. */
class Proc {
  constructor(name, dir, mode, env) {
    this.name = name;
    this.output = '';
    this.child = spawn(process.execPath, ['main.js', mode], {
      cwd: dir,
      env: { ...process.env, NODE_OPTIONS: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(this.child);
    this.child.stdout.on('data', (d) => (this.output += d));
    this.child.stderr.on('data', (d) => (this.output += d));
    this.exit = new Promise((resolve) =>
      this.child.on('close', (code, signal) => {
        children.delete(this.child);
        // kept with KEEP_UPGRADE_TMP=1
        const logFile = path.join(tmpRoot, `${name.replace(/\W+/g, '-')}.log`);
        if (fs.existsSync(tmpRoot)) fs.writeFileSync(logFile, this.output);
        resolve({ code, signal });
      }),
    );
    this.exited = undefined;
    this.exit.then((e) => (this.exited = e));
  }

  async waitFor(regex, timeoutMs, what) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (regex.test(this.output)) return;
      if (this.exited)
        throw this.failure(`exited with ${this.exited.signal ?? this.exited.code} before ${what}`);
      if (Date.now() > deadline) throw this.failure(`no ${what} within ${timeoutMs} ms`);
      await sleep(20);
    }
  }

  failure(why) {
    return new Error(`${this.name}: ${why}\n--- ${this.name} output ---\n${tail(this.output, 30)}`);
  }

  /** Runs a one-shot mode to its exit 0. */
  async done(timeoutMs, what) {
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    const { code, signal } = await this.exit;
    clearTimeout(timer);
    if (code !== 0) throw this.failure(`${what} exited with ${signal ?? code}`);
  }
}

function consumer(name, dir, redisUrl) {
  return new Proc(name, dir, 'consume', {
    REDIS_URL: redisUrl,
    NAME: name,
    ROLE: name.split('-')[0],
  });
}

/** Stops a consumer with SIGTERM: it must close the app and exit 0. */
async function stopGracefully(proc, timeoutMs = 20_000) {
  proc.child.kill('SIGTERM');
  await proc.waitFor(new RegExp(`^CLOSED ${proc.name}$`, 'm'), timeoutMs, 'CLOSED after SIGTERM');
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), 5000);
  const { code, signal } = await proc.exit;
  clearTimeout(timer);
  if (code !== 0) throw proc.failure(`exited with ${signal ?? code} after a graceful close`);
}

// ---------------------------------------------------------------------------------------------
// 3. the scenario

function plans() {
  const plainOld = Array.from({ length: OLD_PLAIN }, (_, n) => ({
    stream: PLAIN,
    payload: { pid: `o-p-${n}`, origin: 'old', fail: n % 10 === 7 },
  }));
  const plainNew = Array.from({ length: NEW_PLAIN }, (_, n) => ({
    stream: PLAIN,
    payload: { pid: `n-p-${n}`, origin: 'new', fail: n % 10 === 3 },
  }));
  const keyed = (origin, from, count) => {
    const out = [];
    for (let seq = from; seq < from + count; seq++) {
      for (let k = 0; k < KEYS; k++) {
        const key = `k${String(k).padStart(2, '0')}`;
        out.push({
          stream: PART,
          key,
          payload: { pid: `${origin[0]}-k-${key}-${seq}`, origin, key, seq, fail: partFails(seq) },
        });
      }
    }
    return out;
  };
  // plain and keyed entries interleaved; a key's entries in the order of their seq
  const interleave = (a, b) => {
    const out = [];
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      if (i < b.length) out.push(b[i]);
      if (i < a.length) out.push(a[i]);
    }
    return out;
  };
  return {
    old: interleave(plainOld, keyed('old', 0, OLD_SEQS)),
    new: interleave(plainNew, keyed('new', OLD_SEQS, NEW_SEQS)),
  };
}

async function publish(dir, plan, label, redisUrl) {
  const planFile = path.join(tmpRoot, `plan-${label}.json`);
  const out = path.join(tmpRoot, `receipts-${label}.json`);
  fs.writeFileSync(planFile, JSON.stringify(plan));
  const proc = new Proc(`${label} producer`, dir, 'publish', {
    REDIS_URL: redisUrl,
    PLAN: planFile,
    OUT: out,
  });
  await proc.done(60_000, 'publish');
  return JSON.parse(fs.readFileSync(out, 'utf8'));
}

/** Owners of the partitions from every lease hash of the group (one, unless a variant renamed it). */
async function leaseOwners(redis) {
  const owners = {};
  for (const key of await redis.keys(`{${PART}}:echo-leases*:${GROUP}`)) {
    const hash = await redis.hgetall(key);
    for (let i = 0; i < PARTITIONS; i++)
      if (hash[`o:${i}`]) (owners[i] ??= []).push(hash[`o:${i}`]);
  }
  return owners;
}

async function records(redis, list = 'upg:handled') {
  return (await redis.lrange(list, 0, -1)).map((r) => JSON.parse(r));
}

/** Lag and pending of group `g` on each stream, from XINFO GROUPS. */
async function groupState(redis) {
  const state = {};
  for (const stream of [PLAIN, ...PARTITION_STREAMS]) {
    const groups = await redis.call('XINFO', 'GROUPS', stream).catch(() => []);
    const g = groups
      .map((flat) => (Array.isArray(flat) ? Object.fromEntries(pairs(flat)) : flat))
      .find((x) => x.name === GROUP);
    state[stream] = g
      ? { pending: Number(g.pending), lag: g.lag === null ? null : Number(g.lag) }
      : undefined;
  }
  return state;
}

function pairs(flat) {
  const out = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([String(flat[i]), flat[i + 1]]);
  return out;
}

const drained = (state) => Object.values(state).every((s) => s && s.pending === 0 && s.lag === 0);

/**
 * Waits for `check`; past `timeoutMs` it throws, or with `soft` (a list) adds the miss to it and
 * returns, so the run goes on to its checks, which tell what went wrong.
 */
async function waitUntil(what, timeoutMs, check, describe, soft) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) {
      const miss = `no ${what} within ${timeoutMs} ms${describe ? `: ${await describe()}` : ''}`;
      if (!soft) throw new Error(miss);
      soft.push(miss);
      return;
    }
    await sleep(100);
  }
}

/** The payload of an entry's fields (its `data` field); `{}` when it has none or not JSON. */

/** The letters of a dead-letter stream as written (XRANGE), with their payload's pid. */
async function rawLetters(redis, dlq) {
  const entries = await redis.xrange(dlq, '-', '+');
  return entries.map(([entryId, flat]) => {
    const f = Object.fromEntries(pairs(flat));
    return { entryId, pid: payloadOf(f).pid, fields: f };
  });
}

async function scenario({ oldApp, newApp }, redis, redisUrl) {
  const plan = plans();
  const problems = []; // waits that timed out (the checks tell what went wrong)
  const t = {};
  const t0 = Date.now();
  const mark = (name) => (t[name] = Date.now() - t0);

  // (i) two old consumers; the old producer publishes
  const procs = { A: consumer(NAMES.A, oldApp, redisUrl), B: consumer(NAMES.B, oldApp, redisUrl) };
  await Promise.all([procs.A, procs.B].map((p) => p.waitFor(/^READY /m, 30_000, 'READY')));
  await waitUntil(
    'partitions shared by old-A and old-B',
    20_000,
    async () => {
      const owners = Object.values(await leaseOwners(redis)).flat();
      return owners.length === PARTITIONS && owners.includes(NAMES.A) && owners.includes(NAMES.B);
    },
    async () => JSON.stringify(await leaseOwners(redis)),
  );
  mark('old consumers ready');
  const publishedOld = publish(oldApp, plan.old, 'old', redisUrl);
  publishedOld.catch(() => undefined); // awaited below; a failure is reported there

  // (ii) SIGKILL old-A once it has handled some of each stream
  await waitUntil(
    `${KILLED} handling both streams`,
    30_000,
    async () => {
      const mine = (await records(redis)).filter((r) => r.proc === KILLED);
      return (
        mine.filter((r) => r.stream === 'plain').length >= KILL_AFTER.plain &&
        mine.filter((r) => r.stream === 'part').length >= KILL_AFTER.part
      );
    },
    async () => tail(procs.A.output, 10),
  );
  procs.A.child.kill('SIGKILL');
  await procs.A.exit;
  mark(`${KILLED} SIGKILLed`);
  await sleep(200); // what the dead process had sent is in by now
  // what it had in hand: its PEL in each stream, and the partitions it held
  const inHand = {};
  for (const stream of [PLAIN, ...PARTITION_STREAMS]) {
    const rows = await redis.xpending(stream, GROUP, '-', '+', 10_000, KILLED).catch(() => []);
    inHand[stream] = rows.map((r) => r[0]);
  }
  const ownersAtKill = await leaseOwners(redis);
  const leasesLeft = Object.entries(ownersAtKill)
    .filter(([, o]) => o.includes(KILLED))
    .map(([i]) => Number(i));
  const backlog = await groupState(redis);
  const receiptsOld = await publishedOld;

  // (iii) two new consumers beside old-B; the new producer publishes
  procs.C = consumer(NAMES.C, newApp, redisUrl);
  procs.D = consumer(NAMES.D, newApp, redisUrl);
  await Promise.all([procs.C, procs.D].map((p) => p.waitFor(/^READY /m, 30_000, 'READY')));
  mark('new consumers ready (mixed group)');
  const receiptsNew = await publish(newApp, plan.new, 'new', redisUrl);
  mark('new producer published');

  // the group is really mixed: old-B handles new entries, the new consumers old ones
  await waitUntil(
    'old-B handling a new entry and the new consumers an old one',
    15_000,
    async () => {
      const all = await records(redis);
      return (
        all.some((r) => r.proc === NAMES.B && r.origin === 'new') &&
        all.some((r) => r.role === 'new' && r.origin === 'old')
      );
    },
    undefined,
    problems,
  );

  // (iv) old-B stops gracefully: the end of the rolling deploy
  await stopGracefully(procs.B);
  mark(`${NAMES.B} stopped (SIGTERM)`);

  // (v) everything drains: lag and pending 0 on every group (an entry leaves the PEL once
  // handled or dead-lettered: its letter and its record are written before its XACK)
  await waitUntil(
    'drain (lag 0, pending 0)',
    120_000,
    async () => drained(await groupState(redis)),
    async () => JSON.stringify(await groupState(redis)),
    problems,
  );
  mark('drained');
  const letters = {
    plain: await rawLetters(redis, `${PLAIN}:dlq`),
    part: await rawLetters(redis, `${PART}:dlq`),
  };
  const deadRecords = await records(redis, 'upg:dead');

  // the failing entries are healed; the NEW admin lists and redrives every dead letter
  await redis.set('upg:healed', '1');
  const adminOut = path.join(tmpRoot, 'admin.json');
  await new Proc('new admin', newApp, 'admin', { REDIS_URL: redisUrl, OUT: adminOut }).done(
    60_000,
    'admin',
  );
  const admin = JSON.parse(fs.readFileSync(adminOut, 'utf8'));
  mark('new admin listed and redrove');
  await waitUntil(
    'the redriven letters handled (lag 0, pending 0)',
    60_000,
    async () => drained(await groupState(redis)),
    async () => JSON.stringify(await groupState(redis)),
    problems,
  );
  mark('redriven letters handled');
  const finalState = await groupState(redis);
  const dlqLengths = {
    plain: await redis.xlen(`${PLAIN}:dlq`),
    part: await redis.xlen(`${PART}:dlq`),
  };
  await Promise.all([stopGracefully(procs.C), stopGracefully(procs.D)]);
  mark('new consumers stopped');

  return {
    plan,
    problems,
    receipts: [...receiptsOld, ...receiptsNew],
    inHand,
    leasesLeft,
    backlog,
    letters,
    deadRecords,
    admin,
    finalState,
    dlqLengths,
    handled: await records(redis),
    phases: t,
  };
}

// ---------------------------------------------------------------------------------------------

function cleanup() {
  for (const child of children) child.kill('SIGKILL');
  if (!tmpRoot) return;
  if (process.env.KEEP_UPGRADE_TMP) log(`kept ${tmpRoot} (apps, process logs, result.json)`);
  else fs.rmSync(tmpRoot, { recursive: true, force: true });
}

async function main() {
  const t0 = Date.now();
  if (BREAK && !BREAKS.includes(BREAK))
    throw new Error(`UPGRADE_BREAK must be one of ${BREAKS.join(', ')}`);
  tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'echo-stream-upgrade-'));
  const apps = await timed('prepare', prepare);
  log(
    `prepared in ${secs(timings.prepare)}: ${Object.entries(timings)
      .filter(([k]) => k !== 'prepare')
      .map(([k, v]) => `${k} ${secs(v)}`)
      .join(', ')}`,
  );
  const server = await startThrowawayRedis({ dir: path.join(tmpRoot, 'redis') });
  const redis = new Redis(server.url);
  let result;
  try {
    const tScenario = Date.now();
    result = await scenario(apps, redis, server.url);
    log(
      `scenario ${secs(Date.now() - tScenario)}: ${Object.entries(result.phases)
        .map(([k, v]) => `${k} @${secs(v)}`)
        .join(', ')}`,
    );
  } finally {
    redis.disconnect();
    await server.stop();
  }
  fs.writeFileSync(path.join(tmpRoot, 'result.json'), JSON.stringify(result, null, 1));
  const { failures, facts } = verify(result);
  for (const f of facts) log(f);
  log(`took ${secs(Date.now() - t0)}`);
  if (failures.length) {
    console.log(`upgrade: FAIL (${failures.length})`);
    const kinds = new Map();
    for (const f of failures) kinds.set(f.kind, [...(kinds.get(f.kind) ?? []), f.msg]);
    const cut = (text) => (text.length > 400 ? `${text.slice(0, 400)}...` : text);
    for (const [kind, msgs] of kinds) {
      if (msgs.length === 1) console.log(`  - ${cut(msgs[0])}`);
      else {
        console.log(`  - ${kind}: ${msgs.length}, e.g.`);
        for (const m of msgs.slice(0, 3)) console.log(`      ${cut(m)}`);
      }
    }
    return 1;
  }
  log(
    `ok: ${result.receipts.length} entries from v0.1.0 and the current producer, rolling deploy passed`,
  );
  return 0;
}

runMain('upgrade', main, cleanup);
