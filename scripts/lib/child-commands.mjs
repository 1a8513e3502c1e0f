// Commands run to completion by the scripts that pack and install the package in temp dirs
// (test/compat/run.mjs, test/upgrade/run.mjs): their output kept for the error, every child
// tracked so a script that fails or is interrupted can kill what it started.
import { spawn } from 'node:child_process';

/** The children started by {@link run} and still running. */
export const children = new Set();

/** The last `lines` lines of `text`. */
export function tail(text, lines = 20) {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/** Runs a command to completion; rejects with its output when it exits non-zero. */
export function run(cmd, args, opts = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
    children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', (err) => {
      children.delete(child);
      reject(new Error(`${cmd}: ${err.message}`));
    });
    child.on('close', (code, signal) => {
      children.delete(child);
      if (code === 0) return resolve({ stdout, stderr });
      reject(
        new Error(
          `${cmd} ${args.join(' ')} exited with ${signal ?? code}\n${tail(stdout + stderr, 40)}`,
        ),
      );
    });
  });
}

/**
 * Runs a runner's `main()` (resolving to its exit code) with `cleanup` after it, however it ends:
 * resolved, thrown (printed as `<name>: <stack>`, exit code 1) or interrupted (SIGINT, SIGTERM:
 * exit 130). `cleanup` kills the children still running and removes the runner's temp dir.
 */
export function runMain(name, main, cleanup) {
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.once(sig, () => {
      cleanup();
      process.exit(130);
    });
  }
  main()
    .then((code) => {
      cleanup();
      process.exitCode = code;
    })
    .catch((err) => {
      cleanup();
      console.error(`${name}: ${err.stack ?? err}`);
      process.exitCode = 1;
    });
}
