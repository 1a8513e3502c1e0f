#!/usr/bin/env node
// Builds another copy of the library for an A/B in one `npm run bench` run:
//
//   node bench/tools/ab-build.mjs <tag> [--ref <git ref>] [--ioredis <version>]
//
// The library's lib/ (of the working tree, or of <git ref>) is compiled into .bench/ab/<tag>/dist
// (git-ignored). With --ioredis, that ioredis release is installed into .bench/ab/<tag>/node_modules
// with the package manager, so the build (and the raw loop given its path) load it; every other
// package (Nest, rxjs ...) resolves from the project's node_modules, as .bench/ab/<tag> sits inside
// the project: one copy of Nest in the process, as in the default build. Prints the knobs to pass.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { ref: { type: 'string' }, ioredis: { type: 'string' } },
});
const [tag] = positionals;
if (!tag || !/^[\w.-]+$/.test(tag)) {
  console.error(
    'usage: node bench/tools/ab-build.mjs <tag> [--ref <git ref>] [--ioredis <version>]',
  );
  process.exit(2);
}
const dir = join(root, '.bench', 'ab', tag);
const run = (cmd, args, cwd = root) =>
  execFileSync(cmd, args, { cwd, stdio: ['ignore', 'inherit', 'inherit'] });

rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
const files = ['lib', 'tsconfig.json', 'tsconfig.build.json'];
if (values.ref) {
  // lib/ holds the dashboard's images: more than execFileSync's 1 MB default buffer
  const tar = execFileSync('git', ['archive', values.ref, ...files], {
    cwd: root,
    maxBuffer: 256 * 1024 * 1024,
  });
  execFileSync('tar', ['-x', '-C', dir], { input: tar });
} else {
  for (const f of files) cpSync(join(root, f), join(dir, f), { recursive: true });
}
if (values.ioredis) {
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `ab-${tag}`, private: true }));
  run('npm', ['install', '--no-audit', '--no-fund', '--no-save', `ioredis@${values.ioredis}`], dir);
}
run(join(root, 'node_modules', '.bin', 'tsc'), ['-p', join(dir, 'tsconfig.build.json')]);
if (existsSync(join(dir, 'lib/dashboard/assets')))
  cpSync(join(dir, 'lib/dashboard/assets'), join(dir, 'dist/dashboard/assets'), {
    recursive: true,
  });

const lib = join(dir, 'dist', 'index.js');
console.log(`built ${lib.slice(root.length + 1)}${values.ref ? ` from ${values.ref}` : ''}`);
console.log(`  BENCH_LIB_VARIANTS=${tag}=${lib}`);
if (values.ioredis)
  console.log(`  BENCH_RAW_VARIANTS=${tag}=${join(dir, 'node_modules', 'ioredis')}`);
