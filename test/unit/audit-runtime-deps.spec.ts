/**
 * The CI dependency check (scripts/audit-runtime-deps.mjs) against a fake registry on loopback:
 * it fails on an advisory for a runtime dependency, passes when there is none, and passes with a
 * clear "NOT CHECKED" line when the audit endpoint cannot be asked.
 */
import { spawn } from 'node:child_process';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

type AuditAnswer = 'advisory' | 'none' | 'unreachable';

/** A registry whose bulk advisory endpoint answers `answer`; packuments are minimal stand-ins. */
async function fakeRegistry(answer: AuditAnswer): Promise<{ url: string; close: () => void }> {
  const server = http.createServer((req, res) => {
    if (req.method === 'GET') {
      const name = decodeURIComponent((req.url ?? '/').slice(1));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ name, 'dist-tags': {}, versions: {} }));
      return;
    }
    req.resume();
    req.on('end', () => {
      if (answer === 'unreachable') {
        res.writeHead(405, { allow: 'GET,HEAD' });
        res.end();
        return;
      }
      const advisory = {
        id: 1,
        url: 'https://example.test/advisory-1',
        title: 'Uncontrolled recursion',
        severity: 'high',
        vulnerable_versions: '<99.0.0',
        cwe: [],
        cvss: { score: 7.5, vectorString: null },
      };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer === 'advisory' ? { ioredis: [advisory] } : {}));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, close: () => server.close() };
}

function runCheck(registry: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn('node', ['scripts/audit-runtime-deps.mjs', '--registry', registry]);
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', (code) => resolve({ code, out }));
  });
}

describe('the CI dependency check', () => {
  it.each([
    [
      'advisory',
      1,
      /FAILED, 1 runtime dependencies.*\n {2}ioredis .*\[high\] Uncontrolled recursion/s,
    ],
    ['none', 0, /no known advisory for the \d+ runtime dependencies/],
    ['unreachable', 0, /NOT CHECKED, the registry's audit endpoint is not reachable \(405/],
  ] as const)(
    'audit answer %s: exit %i',
    async (answer, code, line) => {
      const registry = await fakeRegistry(answer);
      try {
        const result = await runCheck(registry.url);
        expect(result.out).toMatch(line);
        expect(result.code).toBe(code);
      } finally {
        registry.close();
      }
    },
    30_000,
  );
});
