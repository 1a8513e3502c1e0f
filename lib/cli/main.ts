#!/usr/bin/env node
import { Logger } from '@nestjs/common';
import { createInterface } from 'node:readline';
import { runCli } from './cli';

/** The `echo-stream` executable (package `bin`): see `echo-stream --help`. */
// The services the CLI reuses log as in an app; the CLI says what happened itself.
Logger.overrideLogger(false);
const stop = new AbortController();
process.once('SIGINT', () => stop.abort());
process.once('SIGTERM', () => stop.abort());
runCli(process.argv.slice(2), {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  signal: stop.signal,
  env: process.env,
  interactive: process.stdin.isTTY === true,
  ask,
}).then((code) => {
  process.exitCode = code;
});

/** One line typed on stdin after `question` (on stderr, so stdout stays the command's output). */
function ask(question: string): Promise<string> {
  const lines = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  return new Promise<string>((resolve) => {
    let answered = false;
    lines.question(question, (answer) => {
      answered = true;
      resolve(answer);
      lines.close();
    });
    // Ctrl-C or Ctrl-D (stdin ended) before a line: no answer is a no
    lines.once('SIGINT', () => lines.close());
    lines.once('close', () => {
      if (!answered) resolve('');
    });
  });
}
