#!/usr/bin/env node
// Summarizes a V8 .cpuprofile (node --cpu-prof): self time by function and by package.
// Usage: node bench/tools/profile-summary.mjs <file.cpuprofile> [top=30]
import { readFileSync } from 'node:fs';

const [file, topArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: profile-summary.mjs <file.cpuprofile> [top]');
  process.exit(2);
}
const top = Number(topArg ?? 30);
const prof = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const dt = new Map();
// timeDeltas[i] is the time before sample i
for (let i = 0; i < prof.samples.length; i++) {
  const id = prof.samples[i];
  dt.set(id, (dt.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0));
}
const total = [...dt.values()].reduce((a, b) => a + b, 0);

function bucket(url, name) {
  if (name === '(idle)') return '(idle)';
  if (name === '(garbage collector)') return '(gc)';
  if (name === '(program)') return '(program)';
  if (!url) return `(native ${name || 'anonymous'})`;
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  if (url.includes('/dist/')) return 'nestjs-echo-stream (dist)';
  if (url.includes('/bench/')) return 'bench harness';
  if (url.startsWith('node:')) return 'node core';
  return url;
}

const byFn = new Map();
const byPkg = new Map();
for (const [id, us] of dt) {
  const n = byId.get(id);
  const { functionName, url, lineNumber } = n.callFrame;
  const key = `${functionName || '(anonymous)'} ${url ? `${url.replace(/^.*\/(node_modules|dist|bench)\//, '$1/')}:${lineNumber + 1}` : ''}`;
  byFn.set(key, (byFn.get(key) ?? 0) + us);
  const b = bucket(url, functionName);
  byPkg.set(b, (byPkg.get(b) ?? 0) + us);
}
const pct = (us) => `${((us / total) * 100).toFixed(1).padStart(5)}%`;
const ms = (us) => `${(us / 1000).toFixed(0).padStart(7)} ms`;
console.log(`${file}: ${(total / 1e6).toFixed(2)} s sampled`);
console.log('\nby package (self time):');
for (const [k, v] of [...byPkg].sort((a, b) => b[1] - a[1]))
  console.log(`  ${pct(v)} ${ms(v)}  ${k}`);
console.log(`\ntop ${top} functions (self time):`);
for (const [k, v] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, top))
  console.log(`  ${pct(v)} ${ms(v)}  ${k}`);
