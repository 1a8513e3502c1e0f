/**
 * Prints one plain closing line, `tests: N passed, N failed[, N skipped]`, after jest's own summary,
 * so any CI log reader can count the run without knowing jest's format.
 */
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const tail = skipped > 0 ? `, ${skipped} skipped` : '';
    process.stdout.write(
      `tests: ${results.numPassedTests} passed, ${results.numFailedTests} failed${tail}\n`,
    );
  }
}

module.exports = SummaryReporter;
