/* eslint-disable */
// Ends the run with the ten slowest test files (what to split or speed up when the run grows) and one
// plain line, `tests: N passed, N failed, N skipped`, that any CI can read.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const slow = results.testResults
      .map((r) => ({ file: require('node:path').relative(process.cwd(), r.testFilePath), s: (r.perfStats.end - r.perfStats.start) / 1000 }))
      .filter((r) => Number.isFinite(r.s))
      .sort((a, b) => b.s - a.s)
      .slice(0, 10);
    if (slow.length > 1) process.stdout.write(`\nslowest test files:\n${slow.map((r) => `  ${r.s.toFixed(1).padStart(6)} s  ${r.file}`).join('\n')}\n`);
    const skipped = results.numPendingTests + results.numTodoTests;
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    process.stdout.write(`\ntests: ${results.numPassedTests} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
module.exports = SummaryReporter;
