// Runs Redocly CLI's lint (the pinned one beside this file, with redocly.yaml) over the documents
// named on the command line and fails on any problem: `redocly lint` alone exits 0 when it finds
// only warnings, and make test wants none. Problems silenced by an ignore file fail too, and so
// does a mistake in redocly.yaml (an unknown rule would otherwise be skipped with a notice).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const cli = path.join(here, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
const docs = process.argv.slice(2);
if (docs.length === 0) {
  console.error('usage: node lint.mjs DOCUMENT...');
  process.exit(2);
}
let failed = false;
for (const doc of docs) {
  // One run per document: with several, --format json prints one report after another.
  const run = spawnSync(
    process.execPath,
    [cli, 'lint', '--config', path.join(here, 'redocly.yaml'), '--lint-config', 'error',
      '--format', 'json', '--max-problems', '100000', doc],
    {
      encoding: 'utf8',
      maxBuffer: 64 << 20,
      // No telemetry and no update check: the lint reads only the document.
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    },
  );
  let report;
  try {
    report = JSON.parse(run.stdout);
  } catch {
    process.stderr.write(`redocly lint ${doc} gave no report (exit ${run.status}):\n${run.stdout}${run.stderr}`);
    process.exit(2);
  }
  for (const p of report.problems) {
    const at = p.location?.[0] ?? {};
    console.log(`${doc}:${at.start?.line ?? 0}:${at.start?.col ?? 0}: ${p.severity} ${p.ruleId}: ${p.message} (${at.pointer})`);
  }
  const { errors, warnings, ignored } = report.totals;
  console.log(`redocly ${report.version} lint ${doc}: ${errors} errors, ${warnings} warnings, ${ignored} ignored`);
  failed ||= errors + warnings + ignored > 0 || run.status !== 0;
}
process.exit(failed ? 1 : 0);
