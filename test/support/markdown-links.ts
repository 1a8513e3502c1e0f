/**
 * Reads the links of the repository's markdown pages and checks the relative ones without a
 * network: the target file exists and, for `#anchor` links, the target page has a heading with that
 * GitHub-style slug. External links (http, https, mailto) are skipped. Used by
 * test/unit/docs-links.spec.ts.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** One link as written in a page. */
export interface MarkdownLink {
  /** Page it is in, relative to the repository root (`docs/delivery.md`). */
  page: string;
  line: number;
  target: string;
}

/** A link whose file or heading does not exist. */
export interface BrokenLink extends MarkdownLink {
  why: string;
}

/** A page's text, keyed by its path relative to the root; lets the checker run on fixtures. */
export type Pages = Map<string, string>;

const FENCE = /^\s*(```|~~~)/;

/**
 * The slug GitHub gives a heading: its text without markup, lower-cased, without punctuation
 * other than `-` and `_`, spaces turned into `-`. (`Metrics with prom-client / @willsoto/x` ->
 * `metrics-with-prom-client--willsotox`.)
 */
export function githubSlug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // [text](url) -> text
    .replace(/<[^>]+>/g, '') // inline HTML tags
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** Lines outside fenced code blocks, with their 1-based numbers. */
function proseLines(text: string): Array<{ line: number; text: string }> {
  const out: Array<{ line: number; text: string }> = [];
  let inFence = false;
  text.split('\n').forEach((raw, i) => {
    if (FENCE.test(raw)) {
      inFence = !inFence;
      return;
    }
    if (!inFence) out.push({ line: i + 1, text: raw });
  });
  return out;
}

/** The anchors a page offers: one per heading, `-1`, `-2`... for repeated slugs, as GitHub does. */
export function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const { text: line } of proseLines(text)) {
    const m = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const slug = githubSlug(m[2]);
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

/** Every inline link and image of a page (`[text](target)`), outside code blocks and code spans. */
export function linksOf(page: string, text: string): MarkdownLink[] {
  const links: MarkdownLink[] = [];
  for (const { line, text: raw } of proseLines(text)) {
    const prose = raw.replace(/`[^`]*`/g, '');
    for (const m of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      links.push({ page, line, target: m[1] });
    }
  }
  return links;
}

const EXTERNAL = /^(https?:|mailto:)/i;

/**
 * The broken relative links of `pages`. A target outside `pages` must exist under `root`
 * (a source file, an image, a folder); an anchor must name a heading of a page in `pages`.
 */
export function brokenLinks(pages: Pages, root: string): BrokenLink[] {
  const anchors = new Map<string, Set<string>>();
  for (const [page, text] of pages) anchors.set(page, anchorsOf(text));
  const broken: BrokenLink[] = [];
  for (const [page, text] of pages) {
    for (const link of linksOf(page, text)) {
      if (EXTERNAL.test(link.target)) continue;
      const hash = link.target.indexOf('#');
      const file = hash === -1 ? link.target : link.target.slice(0, hash);
      const anchor = hash === -1 ? null : decodeURIComponent(link.target.slice(hash + 1));
      const resolved = file
        ? path.posix.normalize(path.posix.join(path.posix.dirname(page), file))
        : page;
      if (resolved.startsWith('..')) {
        broken.push({ ...link, why: 'points outside the repository' });
        continue;
      }
      const known = pages.has(resolved) || fs.existsSync(path.join(root, resolved));
      if (!known) {
        broken.push({ ...link, why: `no file ${resolved}` });
        continue;
      }
      if (anchor === null) continue;
      const offered = anchors.get(resolved);
      if (!offered) {
        broken.push({ ...link, why: `#${anchor} into ${resolved}, which is not a checked page` });
      } else if (!offered.has(anchor)) {
        broken.push({ ...link, why: `no heading #${anchor} in ${resolved}` });
      }
    }
  }
  return broken;
}

/** README.md, bench/README.md and every docs/*.md of the repository at `root`. */
export function repositoryPages(root: string): Pages {
  const pages: Pages = new Map();
  for (const page of ['README.md', 'bench/README.md']) {
    pages.set(page, fs.readFileSync(path.join(root, page), 'utf8'));
  }
  for (const name of fs.readdirSync(path.join(root, 'docs')).sort()) {
    if (name.endsWith('.md')) {
      pages.set(`docs/${name}`, fs.readFileSync(path.join(root, 'docs', name), 'utf8'));
    }
  }
  return pages;
}
