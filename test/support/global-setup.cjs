/* eslint-disable @typescript-eslint/no-require-imports -- a CommonJS file loaded by Jest before any transform */
/**
 * Jest globalSetup: the e2e and fault suites need a real server. Fail fast, with one clear line,
 * when the chosen one is missing: `ECHO_SERVER` names a build (scripts/lib/echo-server.mjs),
 * default the `redis-server` on PATH (REDIS_SERVER_BIN may point at another binary). Prints which
 * server the run uses when it is not the default.
 */
const fs = require('node:fs');
const path = require('node:path');

function executable(bin) {
  const candidates = bin.includes(path.sep)
    ? [bin]
    : (process.env.PATH || '')
        .split(path.delimiter)
        .filter(Boolean)
        .map((dir) => path.join(dir, bin));
  return candidates.some((file) => {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return fs.statSync(file).isFile();
    } catch {
      return false;
    }
  });
}

function fail(message) {
  const err = new Error(message);
  err.stack = err.message; // one line, no stack trace noise
  throw err;
}

module.exports = async function globalSetup() {
  const { serverCommand } = await import('../../scripts/lib/echo-server.mjs');
  let chosen;
  try {
    chosen = serverCommand();
  } catch (err) {
    fail(err.message);
  }
  if (!chosen.available) fail(chosen.reason);
  if (!executable(chosen.command)) {
    fail(
      chosen.name === 'redis7'
        ? "redis-server not found: install it with 'apt-get install -y redis-server' (Debian/Ubuntu) and run the tests again"
        : `${chosen.name}: ${chosen.command} is not executable: run 'npm run servers' again`,
    );
  }
  if (chosen.name !== 'redis7')
    process.stdout.write(`\nservers: running on ${chosen.name}: ${chosen.label}\n`);
};
