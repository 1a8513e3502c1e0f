#!/usr/bin/env node
import { Logger } from '@nestjs/common';
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
}).then((code) => {
  process.exitCode = code;
});
