/* eslint-disable @typescript-eslint/no-require-imports -- a CommonJS file loaded by Jest before any transform */
/**
 * Jest globalSetup: the e2e and fault suites need a real `redis-server`. Fail fast, with one
 * clear line, when it is missing (REDIS_SERVER_BIN may point at another binary).
 */
const fs = require('node:fs');
const path = require('node:path');

function redisServerOnPath() {
  const bin = process.env.REDIS_SERVER_BIN || 'redis-server';
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

module.exports = async function globalSetup() {
  if (!redisServerOnPath()) {
    const err = new Error(
      "redis-server not found: install it with 'apt-get install -y redis-server' (Debian/Ubuntu) and run the tests again",
    );
    err.stack = err.message; // one line, no stack trace noise
    throw err;
  }
};
