/**
 * The suite's jest runs, one per project of jest.config.cjs, in order: first the specs that may
 * share the machine (several files at a time), then the ones that must have it to themselves (one
 * file at a time). Used by `npm test` (scripts/test-suite.mjs) and `npm run test:servers`
 * (scripts/test-servers.mjs), so both split the suite the same way. docs/testing.md explains it.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Each phase: the jest project it runs and how. Four workers, not jest's default of cores - 1 (one
 * on CI's 2 cores): the parallel specs mostly wait on servers, timers and child processes, so more
 * files than cores keep the cores busy (docs/testing.md has the figures).
 */
export const PHASES = Object.freeze([
  Object.freeze({ project: 'parallel', args: Object.freeze(['--maxWorkers=4']) }),
  Object.freeze({ project: 'serial', args: Object.freeze(['--runInBand']) }),
]);

/** jest's own entry script (its package's `bin`), run with this node. */
function jestBin() {
  const pkg = createRequire(import.meta.url).resolve('jest/package.json');
  return path.join(path.dirname(pkg), 'bin', 'jest.js');
}

/** Jest needs ESM mode for Nest 12; kept next to whatever NODE_OPTIONS already holds. */
function nodeOptions() {
  const current = process.env.NODE_OPTIONS ?? '';
  return current.includes('--experimental-vm-modules')
    ? current
    : `${current} --experimental-vm-modules`.trim();
}

/**
 * Runs one phase: jest on its project with `jestArgs` after the phase's own arguments. Resolves
 * to the exit code, the signal, the wall time and the summary the reporter wrote
 * (test/support/summary-reporter.cjs), or null when jest ended before writing one.
 */
export function runPhase(phase, jestArgs = [], env = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'echo-test-phase-'));
  const summaryFile = path.join(dir, 'summary.json');
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [jestBin(), '--selectProjects', phase.project, ...phase.args, ...jestArgs],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          ...env,
          NODE_OPTIONS: nodeOptions(),
          ECHO_TEST_PHASE: phase.project,
          ECHO_TEST_SUMMARY_FILE: summaryFile,
        },
        stdio: ['ignore', 'inherit', 'inherit'],
      },
    );
    child.on('close', (code, signal) => {
      let summary = null;
      try {
        summary = JSON.parse(fs.readFileSync(summaryFile, 'utf8'));
      } catch {
        // jest ended before its reporters ran (a config error, a kill): no summary
      }
      fs.rmSync(dir, { recursive: true, force: true });
      resolve({
        project: phase.project,
        code: code ?? 1,
        signal,
        seconds: (Date.now() - started) / 1000,
        summary,
      });
    });
  });
}

/**
 * Runs every phase in order, each even when an earlier one failed (a CI log then shows every
 * failure of the run). `filtered`: the caller narrowed the run (paths, -t), so a phase may find no
 * test; otherwise a phase that ran no test file fails, so a wrong pattern in jest.config.cjs
 * cannot drop part of the suite unnoticed.
 */
export async function runPhases({ jestArgs = [], env = {}, filtered = false } = {}) {
  const args = filtered ? ['--passWithNoTests', ...jestArgs] : jestArgs;
  const results = [];
  for (const phase of PHASES) {
    const result = await runPhase(phase, args, env);
    if (!filtered && result.code === 0 && !(result.summary?.files > 0)) {
      result.code = 1;
      result.problem = `the ${phase.project} project ran no test file`;
    }
    results.push(result);
  }
  return results;
}

/** `tests: N passed, N failed[, N skipped]` over all phases (the line CI logs are read by). */
export function totalsLine(results) {
  const sum = (key) => results.reduce((n, r) => n + (r.summary?.[key] ?? 0), 0);
  const skipped = sum('skipped');
  return `tests: ${sum('passed')} passed, ${sum('failed')} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`;
}

/** One line per phase: files, wall time, and its slowest files (where to look when it grows). */
export function phaseLines(results, slowest = 5) {
  return results.map((r) => {
    const s = r.summary;
    const verdict =
      r.code === 0 ? 'passed' : `FAILED (${r.problem ?? `jest exited ${r.signal ?? r.code}`})`;
    if (!s) return `phase ${r.project}: ${verdict}, ${r.seconds.toFixed(0)} s, no summary`;
    const top = [...s.durations]
      .sort((a, b) => b.ms - a.ms)
      .slice(0, slowest)
      .map((d) => `${path.basename(d.file)} ${(d.ms / 1000).toFixed(1)} s`)
      .join(', ');
    const files = `${s.files} file${s.files === 1 ? '' : 's'}`;
    return `phase ${r.project}: ${verdict}, ${files} in ${r.seconds.toFixed(0)} s; slowest: ${top}`;
  });
}
