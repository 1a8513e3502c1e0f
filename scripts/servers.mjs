#!/usr/bin/env node
/**
 * npm run servers [-- <name>...]: brings the server builds the matrix tests on (Valkey 8.0, Valkey
 * 9.1, Redis 8.0, Redis 8.6; see scripts/lib/echo-server.mjs) into `.servers/<name>/`, from Debian's own
 * packages on the archive the machine's apt already uses:
 *
 * - `apt-get download` (private lists and cache, the machine's apt state untouched) of
 *   `<pkg>-server` and `<pkg>-tools` of the wanted series, and of every library they need, taken
 *   from the same suite down to its C library (`Depends` followed through `lib*` packages);
 * - `dpkg-deb -x` of each into `.servers/<name>/root/`;
 * - a `server.json` saying how to run it: the suite's own loader with `--library-path` on the
 *   unpacked libraries, so a build for a newer Debian runs here without touching the host.
 *
 * Idempotent: a build already there (and that still starts: `--version`) is only printed. One line
 * per server; a server that cannot be fetched (archive unreachable, series no longer in its suite)
 * says so and is skipped: the matrix then reports it NOT TESTED. Exit code 1 only for a fetched
 * build that does not run.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { ArchiveUnavailableError, PrivateApt } from './lib/apt-private.mjs';
import { FETCHED_SERVERS, serverCommand, serversDir } from './lib/echo-server.mjs';

const run = promisify(execFile);

const wanted = process.argv.slice(2);
for (const name of wanted) {
  if (!FETCHED_SERVERS[name]) {
    console.error(
      `servers: unknown server ${name} (known: ${Object.keys(FETCHED_SERVERS).join(', ')})`,
    );
    process.exit(2);
  }
}
const names = wanted.length ? wanted : Object.keys(FETCHED_SERVERS);
const dir = serversDir();

/** `<name>: <version line> at <dir>` when the build is there and starts; undefined otherwise. */
async function present(name) {
  const cmd = serverCommand(name);
  if (!cmd.available) return undefined;
  try {
    const { stdout } = await run(cmd.command, [...cmd.args, '--version']);
    return `${stdout.trim()} (${cmd.label}) in ${path.join(dir, name)}`;
  } catch {
    return undefined;
  }
}

/** The upstream series of a Debian version: `5:8.0.6-3` -> `8.0`. */
function seriesOf(version) {
  return /^(?:\d+:)?(\d+\.\d+)\./.exec(version)?.[1];
}

/**
 * The suites a library comes from: the build's own, then for a backport its base (`bookworm`),
 * for experimental unstable (`sid`: experimental holds only what differs from it).
 */
function libSuites(suite) {
  if (suite.endsWith('-backports')) return [suite, suite.replace(/-backports$/, '')];
  if (suite === 'experimental') return [suite, 'sid'];
  return [suite];
}

/** The `lib*` packages `fields` depends on (first of each alternative). */
function libDepends(fields) {
  return [fields['Pre-Depends'], fields.Depends]
    .filter(Boolean)
    .flatMap((d) => d.split(','))
    .map(
      (alt) =>
        alt
          .split('|')[0]
          .trim()
          .split(/[\s(:]/)[0],
    )
    .filter((pkg) => /^(lib|zlib)/.test(pkg));
}

/**
 * Every library package `tools` needs, from `suite` (a backport: or its base suite), as
 * `pkg=version` specs; one `apt-cache show` per level of the dependency tree.
 */
async function libraryClosure(apt, toolsFields, suite) {
  const specs = new Map();
  let level = ['libc6', ...libDepends(toolsFields)];
  while (level.length) {
    const records = await apt.showMany(
      level.flatMap((pkg) => libSuites(suite).map((s) => `${pkg}/${s}`)),
    );
    const next = [];
    for (const pkg of level) {
      // the first record of a package is from the first suite that has it
      const fields = records.find((r) => r.Package === pkg);
      if (!fields) throw new ArchiveUnavailableError(`library ${pkg} not found in ${suite}`);
      specs.set(pkg, `${pkg}=${fields.Version}`);
      next.push(...libDepends(fields));
    }
    level = [...new Set(next)].filter((pkg) => !specs.has(pkg));
  }
  return [...specs.values()];
}

/** The one regular file under `root` named like the C library's loader (ld-linux*.so.*). */
function findLoader(root) {
  const found = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && /^ld-linux.*\.so\.\d+$/.test(e.name)) found.push(p);
    }
  };
  walk(root);
  if (found.length !== 1)
    throw new Error(`expected one ld-linux loader under ${root}, found ${found.length}`);
  return found[0];
}

/** The multiarch library folders of `root` (lib/<triplet>, usr/lib/<triplet>) that exist. */
function libraryDirs(root) {
  return ['lib', 'usr/lib']
    .flatMap((base) => {
      const d = path.join(root, base);
      if (!fs.existsSync(d)) return [];
      return fs
        .readdirSync(d, { withFileTypes: true })
        .filter((e) => e.isDirectory() && /-linux-gnu/.test(e.name))
        .map((e) => path.join(d, e.name));
    })
    .filter((d) => !fs.lstatSync(d).isSymbolicLink());
}

async function fetchServer(apt, name) {
  const spec = FETCHED_SERVERS[name];
  const tools = `${spec.package}-tools`;
  const candidates = (await apt.versions(tools)).filter((v) => seriesOf(v.version) === spec.series);
  const pick = spec.suites.map((suite) => candidates.find((c) => c.suite === suite)).find(Boolean);
  if (!pick) {
    throw new ArchiveUnavailableError(
      `no ${tools} ${spec.series}.x in ${spec.suites.join(' or ')} on the archive`,
    );
  }
  const toolsFields = await apt.show(`${tools}=${pick.version}`);
  const libs = await libraryClosure(apt, toolsFields, pick.suite);

  const work = `${path.join(dir, name)}.tmp-${process.pid}`;
  fs.rmSync(work, { recursive: true, force: true });
  const debs = path.join(work, 'debs');
  const root = path.join(work, 'root');
  fs.mkdirSync(debs, { recursive: true });
  fs.mkdirSync(root, { recursive: true });
  try {
    await apt.download(
      [`${spec.package}-server=${pick.version}`, `${tools}=${pick.version}`, ...libs],
      debs,
    );
    for (const deb of fs.readdirSync(debs).filter((f) => f.endsWith('.deb'))) {
      await run('dpkg-deb', ['-x', path.join(debs, deb), root]);
    }
    const loader = findLoader(root);
    const rel = (p) => path.relative(work, p);
    const manifest = {
      name,
      product: spec.product,
      version: pick.version,
      suite: pick.suite,
      loader: rel(loader),
      libraryPath: libraryDirs(root).map(rel),
      server: rel(path.join(root, 'usr/bin', `${spec.package}-server`)),
      cli: rel(path.join(root, 'usr/bin', `${spec.package}-cli`)),
      packages: fs.readdirSync(debs).filter((f) => f.endsWith('.deb')),
    };
    fs.writeFileSync(path.join(work, 'server.json'), JSON.stringify(manifest, null, 2) + '\n');
    fs.rmSync(debs, { recursive: true, force: true });
    fs.rmSync(path.join(dir, name), { recursive: true, force: true });
    fs.renameSync(work, path.join(dir, name));
  } catch (err) {
    fs.rmSync(work, { recursive: true, force: true });
    throw err;
  }
}

const missing = [];
for (const name of names) {
  const line = await present(name);
  if (line) console.log(`servers: ${name}: ${line}`);
  else missing.push(name);
}
if (missing.length) {
  let exitCode = 0;
  let apt;
  try {
    const suites = [
      ...new Set(missing.flatMap((n) => FETCHED_SERVERS[n].suites.flatMap(libSuites))),
    ];
    apt = new PrivateApt(path.join(dir, 'apt'), suites);
    await apt.update();
  } catch (err) {
    if (!(err instanceof ArchiveUnavailableError)) throw err;
    for (const name of missing) console.log(`servers: ${name}: NOT AVAILABLE: ${err.message}`);
    process.exit(0);
  }
  for (const name of missing) {
    try {
      await fetchServer(apt, name);
      const line = await present(name);
      if (line) {
        console.log(`servers: ${name}: fetched: ${line}`);
      } else {
        console.log(
          `servers: ${name}: FAILED: fetched into ${path.join(dir, name)} but it does not start`,
        );
        exitCode = 1;
      }
    } catch (err) {
      if (!(err instanceof ArchiveUnavailableError)) throw err;
      console.log(`servers: ${name}: NOT AVAILABLE: ${err.message}`);
    }
  }
  process.exit(exitCode);
}
