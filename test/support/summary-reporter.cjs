/* eslint-disable @typescript-eslint/no-require-imports -- a CommonJS file loaded by Jest as is */
/**
 * Prints one plain closing line, `tests: N passed, N failed[, N skipped]`, after jest's own summary,
 * so any CI log reader can count the run without knowing jest's format.
 *
 * Under `npm test` (scripts/test-suite.mjs) jest runs once per phase: the runner sets
 * `ECHO_TEST_PHASE` (the line then reads `tests (<phase>): ...`, and the runner prints the plain
 * `tests:` line for the whole suite) and `ECHO_TEST_SUMMARY_FILE`, where the counts and each spec
 * file's wall time are written as JSON for it to add up.
 */
const fs = require('node:fs');
const path = require('node:path');

class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const tail = skipped > 0 ? `, ${skipped} skipped` : '';
    const phase = process.env.ECHO_TEST_PHASE;
    process.stdout.write(
      `tests${phase ? ` (${phase})` : ''}: ${results.numPassedTests} passed, ${results.numFailedTests} failed${tail}\n`,
    );
    const file = process.env.ECHO_TEST_SUMMARY_FILE;
    if (!file) return;
    const summary = {
      passed: results.numPassedTests,
      failed: results.numFailedTests,
      skipped,
      files: results.numTotalTestSuites,
      // jest counts a file that could not run (a syntax error, a throwing import) here too
      failedFiles: results.numFailedTestSuites,
      durations: results.testResults.map((r) => ({
        file: path.relative(process.cwd(), r.testFilePath),
        ms: r.perfStats.end - r.perfStats.start,
      })),
    };
    fs.writeFileSync(file, JSON.stringify(summary));
  }
}

module.exports = SummaryReporter;
