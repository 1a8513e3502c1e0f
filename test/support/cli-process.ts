/**
 * Runs the built `echo-stream` CLI (`dist/cli/main.js`, as `npx echo-stream` runs it) as a child
 * process: without a terminal (stdin ignored), or on a pseudo-terminal through util-linux
 * `script`, answering its question by writing to the terminal.
 */
import { execFileSync, spawn } from 'node:child_process';
import * as path from 'node:path';

export const CLI_BIN = path.resolve('dist', 'cli', 'main.js');

/** What a run printed and its exit code. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI with no terminal (stdin not a TTY) and only `PATH` plus `env` in its environment. */
export function runCliProcess(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_BIN, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** True when util-linux `script` (Debian: bsdutils) is on the PATH. */
export function scriptAvailable(): boolean {
  try {
    return execFileSync('script', ['--version'], { encoding: 'utf8' }).includes('util-linux');
  } catch {
    return false;
  }
}

/** `'...'` for sh, whatever the text holds. */
function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * Runs the CLI on a pseudo-terminal (`script -qfec`): its stdin is a TTY. Once the terminal
 * output matches `prompt`, `answer` is typed; stdin stays open until the CLI exits. `output` is
 * what the terminal showed (stdout and stderr together, `\r\n` line ends, the typed answer echoed).
 */
export function runCliOnTerminal(
  args: string[],
  prompt: RegExp,
  answer: string,
  timeoutMs = 20_000,
): Promise<{ code: number | null; output: string; asked: boolean }> {
  const command = [process.execPath, CLI_BIN, ...args].map(shellQuote).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      env: { PATH: process.env.PATH ?? '', TERM: 'dumb' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    let asked = false;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the CLI on a terminal did not exit within ${timeoutMs} ms: ${output}`));
    }, timeoutMs);
    const onData = (d: Buffer) => {
      output += d.toString();
      if (!asked && prompt.test(output)) {
        asked = true;
        child.stdin.write(answer);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      child.stdin.destroy();
      resolve({ code, output, asked });
    });
  });
}
