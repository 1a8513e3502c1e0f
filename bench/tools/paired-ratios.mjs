#!/usr/bin/env node
// Per-round paired ratios of a drain run (bench/results/<name>.json): for each contender, its rate
// and CPU per 100k divided by those of a baseline contender OF THE SAME ROUND (the two runs of one
// round are neighbours in time, so a load that comes and goes disturbs them alike). Prints median
// [min-max] over rounds.
// Usage: node bench/tools/paired-ratios.mjs [results.json=bench/results/latest.json] [baseline=raw]
import { readFileSync } from 'node:fs';

const [file = 'bench/results/latest.json', baseline = 'raw'] = process.argv.slice(2);
const runs = JSON.parse(readFileSync(file, 'utf8')).runs?.drain ?? [];
const byRound = new Map();
for (const run of runs) {
  if (!run.valid) continue;
  if (!byRound.has(run.round)) byRound.set(run.round, new Map());
  byRound.get(run.round).set(run.contender, run);
}
const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  return `${mid.toFixed(3)} [${s[0].toFixed(3)}-${s[s.length - 1].toFixed(3)}] (${s.length} rounds)`;
};
const names = [...new Set(runs.map((r) => r.contender))].filter((n) => n !== baseline);
console.log(`paired per-round ratios to '${baseline}' (${file})`);
for (const name of names) {
  const rate = [];
  const cpu = [];
  for (const round of byRound.values()) {
    const a = round.get(name);
    const b = round.get(baseline);
    if (!a || !b) continue;
    rate.push(a.rate / b.rate);
    cpu.push(a.cpuPer100k / b.cpuPer100k);
  }
  if (rate.length === 0) continue;
  console.log(`  ${name.padEnd(14)} throughput ${stats(rate)}   CPU/entry ${stats(cpu)}`);
}
