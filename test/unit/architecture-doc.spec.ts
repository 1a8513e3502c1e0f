/**
 * docs/ARCHITECTURE.md stays true to the tree: every file it names exists, and every file of the
 * engine (lib/consumer/) and of the Redis layer (lib/redis/) is named there, so the
 * behaviour -> file table and the role table find each file a reader looks for.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';

const root = process.cwd();
const doc = readFileSync(join(root, 'docs/ARCHITECTURE.md'), 'utf8');

/** Every `.ts` file below `dir` (relative to the repo root). */
function filesBelow(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(root, dir))) {
    const path = `${dir}/${name}`;
    if (statSync(join(root, path)).isDirectory()) out.push(...filesBelow(path));
    else if (name.endsWith('.ts')) out.push(path);
  }
  return out;
}

const libFiles = filesBelow('lib');
/** Paths written out in full (`lib/consumer/loop/stream-consumer.ts`). */
const paths = [...doc.matchAll(/`(lib\/[^`\s]+?\.(?:ts|js|css|html))`/g)].map((m) => m[1]);
/** Bare file names (`stream-consumer.ts`). */
const names = [...doc.matchAll(/`([\w.-]+\.ts)`/g)].map((m) => m[1]);

describe('docs/ARCHITECTURE.md', () => {
  it('names only files that exist', () => {
    expect(paths.length).toBeGreaterThan(50);
    expect(paths.filter((path) => !existsSync(join(root, path)))).toEqual([]);
    const known = new Set(libFiles.map((file) => basename(file)));
    // a bare name may be a test support file the doc points to
    expect(
      names.filter((name) => !known.has(name) && !existsSync(join(root, 'test/support', name))),
    ).toEqual([]);
  });

  it('names every file of the engine and of the Redis layer', () => {
    const named = new Set([...paths, ...libFiles.filter((file) => names.includes(basename(file)))]);
    const engine = libFiles.filter(
      (f) => f.startsWith('lib/consumer/') || f.startsWith('lib/redis/'),
    );
    expect(engine.length).toBeGreaterThan(60);
    expect(engine.filter((file) => !named.has(file))).toEqual([]);
  });
});
