/**
 * The split of the suite into jest projects (jest.config.cjs, docs/testing.md) loses no spec:
 * every spec file under test/ runs in exactly one of the projects `npm test` runs, each file the
 * config names one by one exists (a renamed serial spec would otherwise drift into the parallel
 * project unnoticed), and the runner's closing lines add up both runs. The config is read the way jest
 * reads it (jest-config), not re-parsed here.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readConfigs } from 'jest-config';
import { globsToMatcher, replacePathSepForGlob } from 'jest-util';
import {
  PHASES,
  phaseLines,
  totalsLine,
  type PhaseResult,
} from '../../scripts/lib/jest-phases.mjs';

const ROOT = process.cwd();

/** Every `*.spec.ts` under test/, relative to the repository. */
function specFiles(dir = path.join(ROOT, 'test')): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : specFiles(full);
    return e.name.endsWith('.spec.ts') ? [path.relative(ROOT, full)] : [];
  });
}

async function readConfig() {
  return readConfigs({ $0: 'jest', _: [] }, [ROOT]);
}

async function projects() {
  const { configs } = await readConfig();
  return configs.map((c) => {
    const matches = globsToMatcher(c.testMatch);
    return {
      name: typeof c.displayName === 'object' ? c.displayName.name : String(c.displayName),
      testMatch: c.testMatch,
      runs: (file: string) => matches(replacePathSepForGlob(path.join(ROOT, file))),
    };
  });
}

describe('jest.config.cjs: the parallel and serial projects', () => {
  it('a test may take 60 s in either project (a testTimeout inside a project is ignored)', async () => {
    expect((await readConfig()).globalConfig.testTimeout).toBe(60_000);
  });

  it('every spec file runs in exactly one project, and npm test runs every project', async () => {
    const all = await projects();
    expect(all.map((p) => p.name).sort()).toEqual(PHASES.map((p) => p.project).sort());
    const files = specFiles();
    expect(files.length).toBeGreaterThan(100);
    const owners = files.map((file) => ({
      file,
      projects: all.filter((p) => p.runs(file)).map((p) => p.name),
    }));
    expect(owners.filter((o) => o.projects.length !== 1)).toEqual([]);
  });

  it('unit specs are never serial; every file the config names one by one exists', async () => {
    const all = await projects();
    const files = specFiles();
    const serial = all.find((p) => p.name === 'serial')!;
    expect(files.filter((f) => f.startsWith('test/unit/') && serial.runs(f))).toEqual([]);
    // the serial e2e list and the parallel fault list, in or out (`!`) of either project
    const named = all
      .flatMap((p) => p.testMatch)
      .map((glob) => glob.replace(/^!/, ''))
      .filter((glob) => !path.basename(glob).includes('*'));
    expect(named.length).toBeGreaterThan(10);
    const missing = named.filter(
      (g) => !files.some((f) => globsToMatcher([g])(path.join(ROOT, f))),
    );
    expect(missing).toEqual([]);
  });
});

describe('the closing lines of npm test', () => {
  const result = (
    project: string,
    code: number,
    passed: number,
    failed: number,
    skipped: number,
  ): PhaseResult => ({
    project,
    code,
    signal: null,
    seconds: 42,
    summary: {
      passed,
      failed,
      skipped,
      files: 3,
      failedFiles: failed > 0 ? 1 : 0,
      durations: [
        { file: 'test/e2e/a.e2e.spec.ts', ms: 1500 },
        { file: 'test/e2e/b.e2e.spec.ts', ms: 9000 },
        { file: 'test/unit/c.spec.ts', ms: 20 },
      ],
    },
  });

  it('tests: adds up the phases; skipped only when there are some', () => {
    expect(totalsLine([result('parallel', 0, 700, 0, 0), result('serial', 1, 190, 2, 0)])).toBe(
      'tests: 890 passed, 2 failed',
    );
    expect(totalsLine([result('parallel', 0, 10, 0, 3), result('serial', 0, 5, 0, 1)])).toBe(
      'tests: 15 passed, 0 failed, 4 skipped',
    );
  });

  it('a phase line: verdict, files, wall time, slowest files first; a phase without a summary says so', () => {
    expect(phaseLines([result('serial', 1, 1, 1, 0)], 2)).toEqual([
      'phase serial: FAILED (jest exited 1), 3 files in 42 s; slowest: b.e2e.spec.ts 9.0 s, a.e2e.spec.ts 1.5 s',
    ]);
    const empty: PhaseResult = {
      project: 'parallel',
      code: 1,
      signal: null,
      seconds: 3,
      summary: null,
      problem: 'the parallel project ran no test file',
    };
    expect(phaseLines([empty])).toEqual([
      'phase parallel: FAILED (the parallel project ran no test file), 3 s, no summary',
    ]);
  });
});
