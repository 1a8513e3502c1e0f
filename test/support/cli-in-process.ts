/**
 * Runs the `echo-stream` CLI's command function (`runCli`, what `dist/cli/main.js` calls) in this
 * process, with the same output and environment a child process gets: for matrices of inputs
 * where a child process per case would cost seconds each. Each URL form still runs once as a real
 * process (test/support/cli-process.ts), where anything written outside the CLI's own output
 * (a library's stray log) would show.
 */
import { Logger } from '@nestjs/common';
import { runCli } from '../../lib/cli/cli';
import type { CliRun } from './cli-process';

// as the executable does: the services the CLI reuses log nothing of their own
Logger.overrideLogger(false);

/** `echo-stream ...args` without a terminal, with only `env` in its environment. */
export async function runCliInProcess(
  args: string[],
  env: Record<string, string> = {},
): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    out: (text) => void (stdout += `${text}\n`),
    err: (text) => void (stderr += `${text}\n`),
    signal: new AbortController().signal,
    env: { ...env },
    interactive: false,
    ask: () => Promise.resolve(''),
  });
  return { code, stdout, stderr };
}
