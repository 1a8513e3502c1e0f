/**
 * Every relative link of README.md, bench/README.md and docs/*.md leads somewhere: the file exists and an `#anchor`
 * (same page or another) names one of the target page's headings, slugged as GitHub does.
 * External links are not fetched (no network in tests).
 */
import * as path from 'node:path';
import {
  anchorsOf,
  brokenLinks,
  githubSlug,
  linksOf,
  repositoryPages,
  type Pages,
} from '../support/markdown-links';

const ROOT = process.cwd();

describe('links of README.md, bench/README.md and docs/', () => {
  it('every relative link names an existing file and, with #anchor, an existing heading', () => {
    const pages = repositoryPages(ROOT);
    expect(pages.size).toBeGreaterThan(5);
    const links = [...pages].flatMap(([page, text]) => linksOf(page, text));
    // the pages link to each other: a checker that found no link would pass vacuously
    expect(links.filter((l) => l.target.includes('#')).length).toBeGreaterThan(50);
    const broken = brokenLinks(pages, ROOT).map((b) => `${b.page}:${b.line} ${b.target}: ${b.why}`);
    expect(broken).toEqual([]);
  });

  it('the README is a front door of at most 400 lines', () => {
    const readme = repositoryPages(ROOT).get('README.md')!;
    expect(readme.split('\n').length).toBeLessThanOrEqual(400);
  });
});

describe('the link checker', () => {
  const fixture = (pages: Record<string, string>): Pages => new Map(Object.entries(pages));

  it('slugs headings as GitHub does', () => {
    expect(githubSlug('Metrics with prom-client / @willsoto/nestjs-prometheus')).toBe(
      'metrics-with-prom-client--willsotonestjs-prometheus',
    );
    expect(githubSlug("The sample's archive")).toBe('the-samples-archive');
    expect(githubSlug('`EchoStreamAdmin.redrive` and [links](x.md)')).toBe(
      'echostreamadminredrive-and-links',
    );
    expect(githubSlug('Nest 11 and Nest 12')).toBe('nest-11-and-nest-12');
    expect([...anchorsOf('# A\n## Notes\n### Notes\n```\n# not a heading\n```\n')]).toEqual([
      'a',
      'notes',
      'notes-1',
    ]);
  });

  it('flags a missing file, a missing heading (same page and other page), and nothing else', () => {
    const pages = fixture({
      'README.md': [
        '# Top',
        '## Options',
        'ok [o](#options), [d](docs/a.md#retries), [img](package.json), [web](https://example.com/x)',
        'bad [x](#nope) and [y](docs/a.md#gone) and [z](docs/missing.md)',
        '`[in code](#not-checked)`',
        '```',
        '[fenced](#not-checked-either)',
        '```',
      ].join('\n'),
      'docs/a.md': '# A\n## Retries\nback [r](../README.md#options) [bad](../README.md#top-1)\n',
    });
    const broken = brokenLinks(pages, ROOT).map((b) => `${b.page}:${b.line} ${b.target}`);
    expect(broken).toEqual([
      'README.md:4 #nope',
      'README.md:4 docs/a.md#gone',
      'README.md:4 docs/missing.md',
      'docs/a.md:3 ../README.md#top-1',
    ]);
  });

  it('resolves targets relative to the page that holds the link', () => {
    const pages = fixture({ 'docs/a.md': '[up](../package.json) [wrong](package.json)\n' });
    expect(brokenLinks(pages, ROOT).map((b) => b.target)).toEqual(['package.json']);
    expect(path.isAbsolute(ROOT)).toBe(true);
  });
});
