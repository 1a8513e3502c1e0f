#!/usr/bin/env node
// CI dependency check: `npm audit --omit=dev` (runtime dependencies only).
//
// - The registry's audit endpoint answered and lists an advisory for a runtime dependency: exit 1,
//   naming each package, its severity and the advisory.
// - It answered with none: exit 0.
// - It could not be asked (offline, a mirror without the audit endpoint, a 4xx/5xx): exit 0 with a
//   clear "not checked" line, so a sandboxed CI run does not fail on the network.
// Told apart by the JSON npm prints: a real report carries `auditReportVersion`; a failed request
// prints an error object instead (and npm exits 1 in both cases, so the exit code alone cannot).
//
// Extra arguments go to npm (e.g. `--registry <url>`, used by the test of this script).
import { spawnSync } from 'node:child_process';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const run = spawnSync(npm, ['audit', '--omit=dev', '--json', ...process.argv.slice(2)], {
  encoding: 'utf8',
  maxBuffer: 64 * 1024 * 1024,
});

let report;
try {
  report = JSON.parse(run.stdout);
} catch {
  report = undefined;
}

if (!report || typeof report !== 'object' || !('auditReportVersion' in report)) {
  const why =
    report?.message ??
    report?.error?.summary ??
    report?.error?.code ??
    (run.error ? run.error.message : (run.stderr || run.stdout || '').trim().split('\n')[0]) ??
    'no report';
  console.log(
    `dependency check: NOT CHECKED, the registry's audit endpoint is not reachable (${why || 'no report'})`,
  );
  process.exit(0);
}

const vulnerabilities = Object.values(report.vulnerabilities ?? {});
if (vulnerabilities.length === 0) {
  const deps = report.metadata?.dependencies?.prod ?? report.metadata?.dependencies?.total ?? '?';
  console.log(`dependency check: no known advisory for the ${deps} runtime dependencies`);
  process.exit(0);
}

console.log(`dependency check: FAILED, ${vulnerabilities.length} runtime dependencies have advisories`);
for (const v of vulnerabilities) {
  const advisories = (v.via ?? [])
    .map((via) => (typeof via === 'string' ? `via ${via}` : `${via.title ?? ''} ${via.url ?? ''}`))
    .join('; ');
  console.log(`  ${v.name} ${v.range ?? ''} [${v.severity}] ${advisories}`.trimEnd());
  if (v.fixAvailable) console.log(`    fix available: ${JSON.stringify(v.fixAvailable)}`);
}
process.exit(1);
