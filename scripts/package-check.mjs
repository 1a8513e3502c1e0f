#!/usr/bin/env node
/**
 * Package check: what `npm publish` would ship, checked on the packed tarball itself (npm run package:check).
 *
 * The tests run against lib/ and dist/, but users get the tarball `npm pack` makes of dist/: a file left out
 * of "files", an "exports" target that is not in it, typings a CommonJS `require` or an ESM `import` cannot
 * find, or a stray folder that doubles the download would all pass the test suite. So this script packs the
 * built package into a temp dir and checks that one tarball:
 *
 *   contents  every path is under package/dist/ or one of package.json, README.md, LICENSE*, CHANGELOG.md;
 *             the entry points are there (dist/index.js, dist/index.d.ts, dist/cli/main.js, every target of
 *             main/types/bin/exports, every dashboard asset of lib/dashboard/assets); nothing of a test or
 *             bench run, no tsbuildinfo; no leftovers of a stale build (a .js.map without its .js, a
 *             compiled .js without its .d.ts or the reverse).
 *   publint   publint on the tarball, --strict (its warnings fail too; suggestions are printed only).
 *   attw      Are The Types Wrong on the tarball: the typings of "." must resolve, and no problem may be
 *             found, under node10 (require), node16 from CommonJS (require), node16 from ESM (import) and
 *             bundler.
 *   size      the tarball (.tgz) and its unpacked contents stay under the budgets below: a change that
 *             grows the package past them (a bundled dependency, assets, a "files" entry) must raise the
 *             budget in the same commit, on purpose.
 *
 * One line per check; exit 1 when any fails. Needs a built dist/ (npm run build); packs with
 * --ignore-scripts (the build is not redone here, and a lifecycle script's output would corrupt --json).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';

/** Budgets in kB (1 kB = 1000 bytes, as npm prints sizes). Set ~20% above the figures of 1.0.0-rc.1
 *  (416 kB packed, 1466 kB unpacked, 515 files; source maps are not shipped: they point at lib/). */
const PACKED_BUDGET_KB = 500;
const UNPACKED_BUDGET_KB = 1750;

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'node_modules', '.bin');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** Entry points named here besides those package.json points at. */
const REQUIRED = ['dist/index.js', 'dist/index.d.ts', 'dist/cli/main.js'];
/** Top-level files a tarball may hold beside dist/. */
const ALLOWED_TOP = [
  /^package\.json$/,
  /^README\.md$/,
  /^LICENSE(\.[A-Za-z]+)?$/,
  /^CHANGELOG\.md$/,
];
/** Never shipped, even under dist/. */
const FORBIDDEN = [
  /(^|\/)(test|tests|__tests__|bench|coverage|sample)\//,
  /\.(spec|test)\.[cm]?[jt]s(\.map)?$/,
  /\.tsbuildinfo$/,
];
/** attw's resolution kinds and what a user's project they stand for. */
const RESOLUTIONS = [
  ['node10', 'node10 require'],
  ['node16-cjs', 'node16 require'],
  ['node16-esm', 'node16 import'],
  ['bundler', 'bundler import'],
];

const kB = (bytes) => `${(bytes / 1000).toFixed(1)} kB`;
const results = [];
function report(name, ok, line, details = []) {
  results.push({ name, ok });
  console.log(`${name}: ${ok ? 'OK' : 'FAIL'}, ${line}`);
  for (const d of details) console.log(`    ${d}`);
}

/** `npm pack --json` into dir: the tarball's path and npm's record of it (files, size, unpackedSize). */
function pack(dir) {
  const run = spawnSync(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (run.status !== 0)
    throw new Error(
      `npm pack failed (exit ${run.status}): ${run.stderr.trim() || run.stdout.trim()}`,
    );
  const [info] = JSON.parse(run.stdout);
  return { tgz: path.join(dir, info.filename), info };
}

/** Every file path package.json's main, types, bin and exports point at (./package.json aside). */
function manifestTargets(manifest) {
  const out = new Set();
  const add = (v) => {
    if (typeof v === 'string') out.add(path.posix.normalize(v));
    else if (v && typeof v === 'object') Object.values(v).forEach(add);
  };
  add(manifest.main);
  add(manifest.types);
  add(manifest.bin);
  add(manifest.exports);
  out.delete('package.json');
  return [...out];
}

function checkContents(files, manifest) {
  const have = new Set(files);
  const assets = fs
    .readdirSync(path.join(ROOT, 'lib', 'dashboard', 'assets'), { recursive: true })
    .map(String)
    .filter((f) => fs.statSync(path.join(ROOT, 'lib', 'dashboard', 'assets', f)).isFile())
    .map((f) => `dist/dashboard/assets/${f.split(path.sep).join('/')}`);
  const required = [...new Set([...REQUIRED, ...manifestTargets(manifest), ...assets])];
  const missing = required.filter((f) => !have.has(f));
  const outside = files.filter(
    (f) => !f.startsWith('dist/') && !ALLOWED_TOP.some((re) => re.test(f)),
  );
  const forbidden = files.filter((f) => FORBIDDEN.some((re) => re.test(f)));
  const compiled = files.filter(
    (f) => f.startsWith('dist/') && !f.startsWith('dist/dashboard/assets/'),
  );
  const stale = [
    ...compiled
      .filter((f) => f.endsWith('.js.map') && !have.has(f.slice(0, -4)))
      .map((f) => `${f} (no .js)`),
    ...compiled
      .filter((f) => f.endsWith('.js') && !have.has(f.replace(/\.js$/, '.d.ts')))
      .map((f) => `${f} (no .d.ts)`),
    ...compiled
      .filter((f) => f.endsWith('.d.ts') && !have.has(f.replace(/\.d\.ts$/, '.js')))
      .map((f) => `${f} (no .js)`),
  ];
  const problems = [
    ...missing.map((f) => `missing: ${f}`),
    ...outside.map((f) => `not meant to ship: ${f}`),
    ...forbidden.map((f) => `test/bench/build leftover: ${f}`),
    ...stale.map((f) => `stale build output: ${f}`),
  ];
  const top = [...new Set(files.map((f) => (f.includes('/') ? `${f.split('/')[0]}/` : f)))].sort();
  report(
    'contents',
    problems.length === 0,
    problems.length === 0
      ? `${files.length} files (${top.join(', ')}); ${required.length} entry points and assets present, nothing else outside dist/`
      : `${problems.length} problem(s)`,
    problems
      .slice(0, 20)
      .concat(problems.length > 20 ? [`... and ${problems.length - 20} more`] : []),
  );
}

async function checkPublint(tgz) {
  const tarball = fs.readFileSync(tgz);
  const { messages, pkg } = await publint({
    pack: {
      tarball: tarball.buffer.slice(tarball.byteOffset, tarball.byteOffset + tarball.byteLength),
    },
    strict: true,
  });
  const count = (type) => messages.filter((m) => m.type === type).length;
  const errors = count('error');
  const warnings = count('warning');
  report(
    'publint',
    errors + warnings === 0,
    `--strict: ${errors} error(s), ${warnings} warning(s), ${count('suggestion')} suggestion(s)`,
    messages.map((m) => `${m.type}: ${formatMessage(m, pkg, { color: false })}`),
  );
}

function checkAttw(tgz, dir) {
  // JSON into a file, not a pipe: attw calls process.exit() right after writing it.
  const outFile = path.join(dir, 'attw.json');
  const fd = fs.openSync(outFile, 'w');
  const run = spawnSync(path.join(BIN, 'attw'), [tgz, '--format', 'json', '--profile', 'strict'], {
    cwd: ROOT,
    stdio: ['ignore', fd, 'pipe'],
    encoding: 'utf8',
  });
  fs.closeSync(fd);
  let analysis;
  try {
    ({ analysis } = JSON.parse(fs.readFileSync(outFile, 'utf8')));
  } catch {
    report(
      'attw',
      false,
      `no report (exit ${run.status}): ${(run.stderr || '').trim().split('\n')[0]}`,
    );
    return;
  }
  if (!analysis.types) {
    report('attw', false, 'the package ships no typings');
    return;
  }
  const kinds = analysis.programInfo?.node16?.moduleKinds ?? {};
  const root = analysis.entrypoints['.'];
  const shown = [];
  const unresolved = [];
  for (const [kind, label] of RESOLUTIONS) {
    const file = root?.resolutions?.[kind]?.resolution?.fileName;
    if (!file || !/\.d\.[cm]?ts$/.test(file)) {
      unresolved.push(`${label}: no typings for "."`);
      continue;
    }
    const detected = kind.startsWith('node16') ? kinds[file]?.detectedKind : undefined;
    const format = detected === 1 ? ' (CJS)' : detected === 99 ? ' (ESM)' : '';
    shown.push(`${label} -> ${file.replace(/^\/node_modules\/[^/]+\//, '')}${format}`);
  }
  const problems = analysis.problems.map(
    (p) =>
      `${p.kind}${p.entrypoint ? ` at "${p.entrypoint}"` : ''}${p.resolutionKind ? ` under ${p.resolutionKind}` : ''}`,
  );
  const ok = run.status === 0 && unresolved.length === 0 && problems.length === 0;
  report(
    'attw',
    ok,
    `"." types: ${shown.join('; ')}; ${Object.keys(analysis.entrypoints).length} entry point(s), ${problems.length} problem(s)`,
    [...unresolved, ...problems],
  );
}

function checkSize(tgz, info) {
  const packed = fs.statSync(tgz).size;
  const unpacked = info.unpackedSize;
  const over = [];
  if (packed > PACKED_BUDGET_KB * 1000)
    over.push(`packed ${kB(packed)} is over its budget of ${PACKED_BUDGET_KB} kB`);
  if (unpacked > UNPACKED_BUDGET_KB * 1000)
    over.push(`unpacked ${kB(unpacked)} is over its budget of ${UNPACKED_BUDGET_KB} kB`);
  report(
    'size',
    over.length === 0,
    `packed ${kB(packed)} (budget ${PACKED_BUDGET_KB} kB), unpacked ${kB(unpacked)} (budget ${UNPACKED_BUDGET_KB} kB), ${info.entryCount} files`,
    over.length
      ? [
          ...over,
          'a growth on purpose raises PACKED_BUDGET_KB / UNPACKED_BUDGET_KB in scripts/package-check.mjs',
        ]
      : [],
  );
}

async function main() {
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const missingBuild = REQUIRED.filter((f) => !fs.existsSync(path.join(ROOT, f)));
  if (missingBuild.length) {
    console.log(
      `package check: FAIL, no build to pack (${missingBuild.join(', ')} missing): run npm run build first`,
    );
    process.exit(1);
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'echo-stream-package-check-'));
  try {
    const { tgz, info } = pack(dir);
    console.log(
      `pack: ${manifest.name}@${manifest.version} -> ${path.basename(tgz)} (${info.entryCount} files)`,
    );
    checkContents(
      info.files.map((f) => f.path),
      manifest,
    );
    await checkPublint(tgz);
    checkAttw(tgz, dir);
    checkSize(tgz, info);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const failed = results.filter((r) => !r.ok).map((r) => r.name);
  console.log(
    failed.length
      ? `package check: FAIL (${failed.join(', ')})`
      : `package check: OK (${results.map((r) => r.name).join(', ')})`,
  );
  process.exit(failed.length ? 1 : 0);
}

main().catch((err) => {
  console.log(`package check: FAIL, ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
