#!/usr/bin/env node
/**
 * npm run test:servers [-- <name>...]: the server matrix. Brings the builds (`npm run servers`),
 * then for each of Valkey 8.0, Valkey 9.1, Redis 8.0 and Redis 8.6 runs the specs whose outcome depends on
 * what the server answers (below) with `ECHO_SERVER=<name>`, split into the same two jest runs as
 * `npm test` (scripts/lib/jest-phases.mjs), and prints one line per server:
 *
 *   PASSED      every spec passed on it
 *   FAILED      a spec failed, or the fetch broke for another reason: the exit code is 1
 *   NOT TESTED  the build could not be fetched (archive unreachable, series gone from its suite):
 *               said loudly, but the exit code stays 0
 *
 * The whole suite on Redis 7.0 is `npm test`, run before this in CI.
 */
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FETCHED_SERVERS, serverCommand } from './lib/echo-server.mjs';
import { phaseLines, runPhases } from './lib/jest-phases.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The e2e and fault suites run on every server (`TEST_SERVERS_SPECS`: other paths, space-separated)... */
const SPEC_ROOTS = process.env.TEST_SERVERS_SPECS?.trim().split(/\s+/) ?? [
  'test/e2e',
  'test/faults',
];

/**
 * ...except the specs that exercise only this package's own code and would pass or fail alike on
 * any server (they run on Redis 7.0 in `npm test`), and the browser ones: the matrix buys server
 * coverage per CI minute.
 */
const SKIPPED = {
  'test/e2e/nest-pipeline.e2e.spec.ts': 'guards, pipes, interceptors, filters: Nest only',
  'test/e2e/tracing.e2e.spec.ts': 'OpenTelemetry spans: no server difference',
  'test/e2e/prom-client-metrics.e2e.spec.ts': 'prom-client glue over the same stats',
  'test/e2e/bounded-errors.e2e.spec.ts': 'error-text bounds: our code',
  'test/e2e/unprintable-errors.e2e.spec.ts': 'verdicts of odd thrown values: our code',
  'test/e2e/dashboard-page.e2e.spec.ts': 'headless Chromium over the API dashboard-api covers',
  'test/e2e/sample-page.e2e.spec.ts': 'the sample app in Chromium',
  'test/e2e/sample-archive.e2e.spec.ts': "the sample's archive hook: retention.e2e covers it",
  'test/e2e/dashboard-page-hardening.e2e.spec.ts':
    'the page in Chromium: escapes, refresh, confirm',
  'test/e2e/dashboard-rebinding.e2e.spec.ts':
    'the host check in Chromium: dashboard-hosts covers it',
  'test/e2e/dashboard-hosts.e2e.spec.ts': 'Host and Origin rules over HTTP: our code',
  'test/e2e/cli-safety.e2e.spec.ts': 'credentials and escapes in what the CLI prints: our code',
  'test/faults/connection.fault.spec.ts':
    "our read watchdog's timing behind a TCP proxy (ms bounds): our timers, not the server's",
};

/**
 * Valkey 8.0 and Redis 8.0 run the same Redis 7 path as Valkey 9.1 does (Redis 8.6 takes its own
 * verbs where the module uses them: docs/compatibility.md "Server features"): they run the
 * core (the loop, reads, retries, dead letters, partitions, skips, effectively-once, faults of
 * the loop) and leave the surfaces and the Cluster to the other three, which keeps the matrix of
 * four servers within CI's budget. `TEST_SERVERS_FULL=1` runs everything on them too.
 */
const CORE_ONLY = new Set(['valkey8', 'redis8']);
const BEYOND_CORE = [
  // the Cluster: Redis 7.0, Valkey 9.1 and Redis 8.6 run it
  '/test/e2e/cluster[^/]*$',
  '/test/e2e/lifecycle-cluster\\.e2e\\.spec\\.ts$',
  '/test/e2e/idempotent-publish-cluster\\.e2e\\.spec\\.ts$',
  '/test/faults/cluster-[^/]*$',
  // the operator surfaces over the same admin queries
  '/test/e2e/dashboard-[^/]*$',
  '/test/e2e/cli[-.][^/]*$',
  '/test/e2e/history\\.e2e\\.spec\\.ts$',
  '/test/e2e/consumer-cleanup\\.e2e\\.spec\\.ts$',
  '/test/e2e/retention\\.e2e\\.spec\\.ts$',
  '/test/faults/retention-oracle\\.fault\\.spec\\.ts$',
  // replication, ACL and outages of the server process
  '/test/e2e/durable-publish\\.e2e\\.spec\\.ts$',
  '/test/faults/auth-acl[^/]*$',
  '/test/faults/redis-down\\.fault\\.spec\\.ts$',
  '/test/faults/redis-restart\\.fault\\.spec\\.ts$',
  '/test/e2e/many-handlers\\.e2e\\.spec\\.ts$',
];

const names = process.argv.slice(2);
for (const name of names) {
  if (!FETCHED_SERVERS[name]) {
    console.error(
      `test:servers: unknown server ${name} (known: ${Object.keys(FETCHED_SERVERS).join(', ')})`,
    );
    process.exit(2);
  }
}
const servers = names.length ? names : Object.keys(FETCHED_SERVERS);

function run(cmd, args, env, { capture = false } = {}) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', capture ? 'pipe' : 'inherit', 'inherit'],
    });
    let out = '';
    child.stdout?.on('data', (d) => {
      out += d;
      process.stdout.write(d);
    });
    child.on('close', (code, signal) => resolve({ code: code ?? 1, signal, out }));
  });
}

// 1. the builds (idempotent: a second run only prints where each is)
const fetched = await run(
  process.execPath,
  ['scripts/servers.mjs', ...servers],
  {},
  { capture: true },
);
const whyNot = new Map(
  [...fetched.out.matchAll(/^servers: (\S+): NOT AVAILABLE: (.*)$/gm)].map((m) => [m[1], m[2]]),
);

// 2. the specs, one jest run per server
const ignore = Object.keys(SKIPPED).map((f) => `/${f.replace(/\./g, '\\.')}$`);
const results = [];
for (const name of servers) {
  const chosen = serverCommand(name);
  if (!chosen.available) {
    // NOT TESTED only for what the archive could not give; a fetch that broke otherwise (the
    // script's own error above) fails, so a bug cannot switch the matrix off unnoticed
    results.push(
      whyNot.has(name)
        ? { name, verdict: 'NOT TESTED', detail: whyNot.get(name) }
        : {
            name,
            verdict: 'FAILED',
            detail: `not fetched: scripts/servers.mjs exited ${fetched.code}`,
          },
    );
    continue;
  }
  console.log(`\n==> test:servers: ${name}: ${chosen.label}`);
  const started = Date.now();
  // split as npm test splits the suite (PHASES, scripts/lib/jest-phases.mjs): the parallel project
  // several files at a time, then the serial one alone; the roots before the patterns (the array
  // option would swallow what follows it)
  const core = CORE_ONLY.has(name) && process.env.TEST_SERVERS_FULL !== '1';
  const ignored = core ? [...ignore, ...BEYOND_CORE] : ignore;
  if (core) console.log(`test:servers: ${name}: the core specs (TEST_SERVERS_FULL=1: all)`);
  const phases = await runPhases({
    jestArgs: [...SPEC_ROOTS, ...ignored.flatMap((p) => ['--testPathIgnorePatterns', p])],
    env: { ECHO_SERVER: name },
    filtered: process.env.TEST_SERVERS_SPECS !== undefined,
  });
  for (const line of phaseLines(phases)) console.log(`test:servers: ${name}: ${line}`);
  const seconds = Math.round((Date.now() - started) / 1000);
  const failed = phases.filter((p) => p.code !== 0);
  results.push({
    name,
    verdict: failed.length === 0 ? 'PASSED' : 'FAILED',
    detail: `${chosen.label}${core ? ', core specs' : ''}, ${seconds} s${
      failed.length === 0
        ? ''
        : `, ${failed.map((p) => `${p.project}: ${p.problem ?? `jest exited ${p.signal ?? p.code}`}`).join('; ')}`
    }`,
  });
}

console.log(
  '\ntest:servers: e2e and fault suites per server (Redis 7.0: the whole suite, npm test)',
);
for (const r of results) console.log(`test:servers: ${r.name}: ${r.verdict} (${r.detail})`);
process.exit(results.some((r) => r.verdict === 'FAILED') ? 1 : 0);
