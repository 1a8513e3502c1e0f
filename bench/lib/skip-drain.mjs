// Runs one drain of bench/lib/skip-drain-child.mjs in a fresh child process (every variant starts
// as cold as the others), for bench/effectively-once.mjs and bench/server-features.mjs.
import { fork } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CHILD = join(dirname(fileURLToPath(import.meta.url)), 'skip-drain-child.mjs');

/**
 * Drains `cfg.group` of `cfg.stream` (its `cfg.n` entries) with the handler of `cfg.variant`
 * (see skip-drain-child.mjs: lib, url, stream, group, variant, n, redisPid, serverFeatures) in a
 * child process run with `nodeArgs`; its figures. A drain that did not handle every entry or left
 * entries pending throws: no figure from it.
 */
export function skipDrain(cfg, nodeArgs = []) {
  return new Promise((resolvePromise, reject) => {
    const child = fork(CHILD, [], {
      env: { ...process.env, BENCH_CHILD: JSON.stringify(cfg) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      execArgv: nodeArgs,
    });
    let result = null;
    child.on('message', (msg) => {
      if (msg?.type === 'result') result = msg;
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      const { variant, n } = cfg;
      if (result?.fatal) reject(new Error(`${variant} drain failed: ${result.fatal}`));
      else if (!result) reject(new Error(`${variant} drain exited with ${code} and no result`));
      else if (result.handled < n || result.pending !== 0)
        reject(
          new Error(
            `${variant} drain invalid: handled ${result.handled} of ${n}, ${result.pending} pending`,
          ),
        );
      else resolvePromise(result);
    });
  });
}
