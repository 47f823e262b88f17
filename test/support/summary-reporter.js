/* eslint-disable */
// Ends the run with the ten slowest test files (what to split or speed up when the run grows; every file's time
// of a whole run goes to test/.tmp/test-durations.txt) and one plain line, `tests: N passed, N failed, N skipped`, that any CI can read.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const all = results.testResults
      .map((r) => ({ file: require('node:path').relative(process.cwd(), r.testFilePath), s: (r.perfStats.end - r.perfStats.start) / 1000 }))
      .filter((r) => Number.isFinite(r.s))
      .sort((a, b) => b.s - a.s);
    // A grouped run (test/support/test-groups.ts) also has each grouped file's own time.
    try {
      const fs = require('node:fs');
      const dir = 'test/.tmp/spec-durations';
      const started = results.startTime;
      for (const f of fs.readdirSync(dir)) {
        if (!f.endsWith('.json') || fs.statSync(`${dir}/${f}`).mtimeMs < started) continue;
        for (const [file, s] of Object.entries(JSON.parse(fs.readFileSync(`${dir}/${f}`, 'utf8')))) all.push({ file: `  ${file} (in ${f.replace(/\.json$/, '')})`, s });
      }
      all.sort((a, b) => b.s - a.s);
    } catch {
      // not a grouped run
    }
    const slow = all.slice(0, 10);
    // Every file's time of a whole run, for deciding what to split: test/.tmp/test-durations.txt (not committed).
    if (all.length > 50) try {
      const fs = require('node:fs');
      fs.mkdirSync('test/.tmp', { recursive: true });
      fs.writeFileSync('test/.tmp/test-durations.txt', all.map((r) => `${r.s.toFixed(1).padStart(7)} s  ${r.file}`).join('\n') + '\n');
    } catch {
      // a read-only checkout still gets the summary below
    }
    if (slow.length > 1) process.stdout.write(`\nslowest test files:\n${slow.map((r) => `  ${r.s.toFixed(1).padStart(6)} s  ${r.file}`).join('\n')}\n`);
    const skipped = results.numPendingTests + results.numTodoTests;
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    process.stdout.write(`\ntests: ${results.numPassedTests} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
module.exports = SummaryReporter;
