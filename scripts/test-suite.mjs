#!/usr/bin/env node
/**
 * npm test [-- <jest arguments>]: the whole suite, as CI runs it (after `npm run build`, the
 * pretest script). Jest runs twice (scripts/lib/jest-phases.mjs): the `parallel` project two files
 * at a time, then the `serial` project one file at a time; arguments given after `--` (paths,
 * `-t <name>`) go to both runs. Ends with one line per phase (files, wall time, the slowest files)
 * and the plain `tests: N passed, N failed` line for the whole suite; exits 1 when a phase failed.
 */
import { phaseLines, runPhases, totalsLine } from './lib/jest-phases.mjs';

const jestArgs = process.argv.slice(2);
const started = Date.now();
const results = await runPhases({ jestArgs, filtered: jestArgs.length > 0 });

console.log('');
for (const line of phaseLines(results)) console.log(line);
console.log(`suite: ${Math.round((Date.now() - started) / 1000)} s`);
console.log(totalsLine(results));
process.exit(results.every((r) => r.code === 0) ? 0 : 1);
