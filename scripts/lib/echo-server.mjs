/**
 * Which server build the throw-away servers run (tests, bench, demo, compat), chosen with
 * `ECHO_SERVER`:
 *
 *   redis7   (default) the `redis-server` on PATH, or `$REDIS_SERVER_BIN`: Redis 7.0 on the CI image
 *   valkey8  Valkey 8.0 from Debian bookworm-backports
 *   valkey9  Valkey 9.1 from Debian's newer suite
 *   redis8   Redis 8.0 from Debian's newer suite
 *   redis86  Redis 8.6 from Debian's experimental suite (with unstable's C library)
 *
 * The fetched builds are brought by `npm run servers` (scripts/servers.mjs) into
 * `.servers/<name>/` (or `$ECHO_SERVERS_DIR/<name>/`), each with the C library of its own suite,
 * and described there by a `server.json` this module reads. They run through that C library's
 * loader (`ld-linux... --library-path <its libs> <binary>`), so a newer suite's build runs on an
 * older host without touching the host's libraries.
 *
 * Every place that starts a server asks {@link serverCommand} for the command and the arguments
 * that go before the server's own arguments; nothing else spawns `redis-server` by name.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The builds `npm run servers` fetches: the Debian source package (`<package>-server` holds the
 * `/usr/bin/<package>-server` link, `<package>-tools` the binary and the cli), the suites searched in
 * order, and the upstream series a version must belong to.
 */
export const FETCHED_SERVERS = Object.freeze({
  valkey8: { product: 'Valkey', package: 'valkey', suites: ['bookworm-backports'], series: '8.0' },
  valkey9: { product: 'Valkey', package: 'valkey', suites: ['forky', 'sid'], series: '9.1' },
  redis8: { product: 'Redis', package: 'redis', suites: ['forky', 'sid'], series: '8.0' },
  // experimental has no C library of its own: its builds run on unstable's (scripts/servers.mjs)
  redis86: { product: 'Redis', package: 'redis', suites: ['experimental'], series: '8.6' },
});

/** Every name `ECHO_SERVER` accepts, the default first. */
export const SERVER_NAMES = Object.freeze(['redis7', ...Object.keys(FETCHED_SERVERS)]);

/** Where the fetched builds live: `$ECHO_SERVERS_DIR`, default `<repo>/.servers` (git-ignored). */
export function serversDir() {
  return path.resolve(process.env.ECHO_SERVERS_DIR || path.join(REPO_ROOT, '.servers'));
}

/** The server `ECHO_SERVER` names (default `redis7`); an unknown name throws, listing the known ones. */
export function chosenServer(env = process.env) {
  const name = (env.ECHO_SERVER || 'redis7').trim();
  if (!SERVER_NAMES.includes(name)) {
    throw new Error(
      `ECHO_SERVER=${name} is not a known server: use one of ${SERVER_NAMES.join(', ')}`,
    );
  }
  return name;
}

/**
 * How to start server `name` (default: the chosen one).
 *
 * @returns {{ name: string, label: string, command: string, args: string[],
 *   cli: { command: string, args: string[] }, available: boolean, reason?: string }}
 *   `command` + `args` go before the server's own arguments; `available` is false (with `reason`)
 *   for a fetched build whose `server.json` is missing: run `npm run servers`.
 */
export function serverCommand(name = chosenServer()) {
  if (name === 'redis7') {
    return {
      name,
      label: 'the redis-server on PATH',
      command: process.env.REDIS_SERVER_BIN || 'redis-server',
      args: [],
      cli: { command: 'redis-cli', args: [] },
      available: true,
    };
  }
  if (!FETCHED_SERVERS[name]) throw new Error(`unknown server ${name}`);
  const dir = path.join(serversDir(), name);
  const manifestFile = path.join(dir, 'server.json');
  let manifest;
  try {
    manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8'));
  } catch {
    return {
      name,
      label: name,
      command: '',
      args: [],
      cli: { command: '', args: [] },
      available: false,
      reason: `${name} is not fetched (no ${manifestFile}): run 'npm run servers'`,
    };
  }
  const abs = (p) => path.resolve(dir, p);
  const libraryPath = manifest.libraryPath.map(abs).join(':');
  const viaLoader = (binary) => ['--library-path', libraryPath, abs(binary)];
  return {
    name,
    label: `${manifest.product} ${manifest.version} (Debian ${manifest.suite})`,
    command: abs(manifest.loader),
    args: viaLoader(manifest.server),
    cli: { command: abs(manifest.loader), args: viaLoader(manifest.cli) },
    available: true,
  };
}
