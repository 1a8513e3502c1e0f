/**
 * The bench runner's pure parts (bench/README.md "Layout"): the knobs (bench/lib/options.mjs),
 * the contender table (bench/contenders/table.mjs) and the markdown report
 * (bench/report/markdown.mjs). No server, no child process: what `npm run bench` prints and
 * writes is checked against a published run, and the contenders a knob picks are checked by name.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { contenderTable } from '../../bench/contenders/table.mjs';
import { BENCH_DIR, readOptions, ROOT } from '../../bench/lib/options.mjs';
import { markdown } from '../../bench/report/markdown.mjs';

const RESULTS = path.join(process.cwd(), 'bench', 'results');
const headline = () => JSON.parse(fs.readFileSync(path.join(RESULTS, 'headline.json'), 'utf8'));
const names = (env: NodeJS.ProcessEnv) =>
  contenderTable(readOptions(env)).chosen.map((c) => c.name);

describe('bench report: the markdown of a run', () => {
  it('renders the published headline run exactly as bench/results/headline.md', () => {
    const md = markdown(headline());
    expect(md).toContain('## Drain: pre-filled entries');
    expect(md).toContain('## Latency publish -> handler');
    expect(md).toContain('## Goals (issue 25, docs/benchmarks.md)');
    expect(md).toBe(fs.readFileSync(path.join(RESULTS, 'headline.md'), 'utf8'));
  });

  it('shows a contender that failed a validity gate as INVALID with the reason, not a figure', () => {
    const report = headline();
    report.drain.lib = { ...report.drain.lib, valid: false, invalid: ['handled 99 != 100000'] };
    const row = markdown(report)
      .split('\n')
      .find((l) => l.startsWith('| echo-stream, per-entry handler (defaults) | 100,000 |'));
    expect(row).toBe(
      '| echo-stream, per-entry handler (defaults) | 100,000 | INVALID: handled 99 != 100000 | | | | | | |',
    );
  });

  it('leaves out the section of a workload that did not run', () => {
    const report = headline();
    delete report.latency;
    const md = markdown(report);
    expect(md).toContain('## Drain: pre-filled entries');
    expect(md).not.toContain('## Latency');
  });
});

describe('bench knobs: the contenders a run picks', () => {
  it('BENCH_HEADLINE=1 picks the four contenders of the README table', () => {
    expect(names({ BENCH_HEADLINE: '1' })).toEqual(['raw', 'raw-bp', 'node-redis', 'lib']);
  });

  it('BENCH_ONLY keeps raw, the baseline of every ratio', () => {
    expect(names({ BENCH_ONLY: 'lib-batch' })).toEqual(['raw', 'lib-batch']);
  });

  it('the smoke run leaves lib-solo out unless BENCH_ONLY names it', () => {
    expect(names({})).toContain('lib-solo');
    expect(names({ BENCH_QUICK: '1' })).not.toContain('lib-solo');
    expect(names({ BENCH_QUICK: '1', BENCH_ONLY: 'lib-solo' })).toEqual(['raw', 'lib-solo']);
  });

  it('BENCH_LIB_VARIANTS and BENCH_RAW_VARIANTS add A/B contenders, lib@tag against raw@tag', () => {
    const { all } = contenderTable(
      readOptions({
        BENCH_LIB_VARIANTS: 'base=/tmp/base/dist/index.js',
        BENCH_RAW_VARIANTS: 'base=/tmp/base/node_modules/ioredis',
      }),
    );
    const at = (name: string) => all.findIndex((c) => c.name === name);
    expect(at('raw@base')).toBe(1);
    expect(at('lib@base')).toBe(at('lib') + 1);
    expect(all[at('lib@base')]).toMatchObject({
      script: 'library.mjs',
      cfg: { variant: 'each', lib: '/tmp/base/dist/index.js' },
      baseline: 'raw@base',
    });
  });

  it('BENCH_FULL adds the slow memory runs', () => {
    const memory = (env: NodeJS.ProcessEnv) =>
      contenderTable(readOptions(env))
        .chosen.filter((c) => c.workloads.includes('memory'))
        .map((c) => c.name);
    expect(memory({})).toEqual(['raw', 'lib', 'lib-batch']);
    expect(memory({ BENCH_FULL: '1' })).toEqual([
      'raw',
      'lib',
      'lib-batch',
      'lib-c16',
      'bullmq-c50',
    ]);
  });
});

describe('bench knobs: defaults and overrides', () => {
  it('BENCH_QUICK=1: the smoke run, results in the git-ignored .bench/quick.*', () => {
    const o = readOptions({ BENCH_QUICK: '1' });
    expect(o).toMatchObject({ n: 2000, slowN: 500, rounds: 1, rates: [1000], out: 'quick' });
    expect(o.results).toBe(path.join(ROOT, '.bench'));
    expect(o.workloads).toEqual(['drain', 'latency', 'idle', 'memory', 'retries', 'many-handlers']);
  });

  it('a knob set explicitly wins over the mode (SLOW_N never above N)', () => {
    const o = readOptions({ BENCH_QUICK: '1', BENCH_N: '300', BENCH_OUT: 'x', BENCH_ROUNDS: '' });
    expect(o).toMatchObject({ n: 300, slowN: 300, rounds: 1, out: 'x' });
    expect(o.results).toBe(path.join(BENCH_DIR, 'results'));
  });

  it('the full run: every workload, results in bench/results/latest.*', () => {
    const o = readOptions({});
    expect(o).toMatchObject({ n: 100_000, slowN: 20_000, rounds: 3, rates: [1000, 10000] });
    expect(o.out).toBe('latest');
    expect(o.workloads).toContain('effectively-once');
    expect(o.workloads).toContain('partitions');
  });
});
