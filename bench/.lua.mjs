// scratch: Redis CPU per entry of the exactly-once commit script and variants
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { startRedis } from './lib/redis-server.mjs';
const require = createRequire(import.meta.url);
const { ENTRY_COMMIT_SCRIPT } = require('../dist/redis/loop/entry-commit.script.js');
const cpu = (pid) => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8'); const x = f.slice(f.lastIndexOf(')') + 2).split(' '); return (Number(x[11]) + Number(x[12])) / 100; };
const N = 50000, B = 100;
const variants = {
  asIs: ENTRY_COMMIT_SCRIPT,
  //noPending: ENTRY_COMMIT_SCRIPT.replace("local row = redis.call('XPENDING', stream, group, id, id, 1)[1]", "local row = {id, consumer, 0, deliveries}"),
  //noApply: ENTRY_COMMIT_SCRIPT.replace("      apply(ops, count)\n", ""),
  //nothing: ENTRY_COMMIT_SCRIPT.replace("local row = redis.call('XPENDING', stream, group, id, id, 1)[1]", "local row = {id, consumer, 0, deliveries}").replace("local why, duplicate = check(ops, count)", "local why, duplicate = nil, nil").replace("      apply(ops, count)\n", ""),
};
const data = JSON.stringify({ n: 1, text: 'x'.repeat(160) });
for (const [name, script] of Object.entries(variants)) {
  const r = await startRedis();
  const a = r.admin;
  for (let i = 0; i < N; i += 500) { const p = a.pipeline(); for (let j = i; j < i + 500; j++) p.xadd('src', '*', 'id', `b${j}`, 'data', data); await p.exec(); }
  await a.xgroup('CREATE', 'src', 'g', '0');
  const sha = await a.script('LOAD', script);
  let total = 0, ms = 0;
  for (;;) {
    const res = await a.xreadgroup('GROUP', 'g', 'c', 'COUNT', B, 'STREAMS', 'src', '>');
    if (!res) break;
    const entries = res[0][1];
    const keys = ['src', 'out'];
    const argv = ['g', 'c', entries.length, entries[0][0], entries[entries.length - 1][0]];
    for (const [id, f] of entries) {
      keys.push(`ack:{src}:g:${f[1]}`);
      argv.push(id, 1, 2, 'xadd', 2, 4, 'id', `${f[1]}o`, 'data', data, 'seen', keys.length, 2, f[1], 86400000);
    }
    const c0 = cpu(r.pid); const t0 = performance.now();
    await a.evalsha(sha, keys.length, ...keys, ...argv);
    ms += performance.now() - t0; total += entries.length;
  }
  // measure CPU over the whole loop instead (reads included): separate run
  const st = await a.info('commandstats');
  const us = Number(/cmdstat_evalsha:calls=\d+,usec=(\d+)/.exec(st)[1]);
  console.log(name, 'entries', total, 'script wall µs/entry', (ms * 1000 / total).toFixed(2), 'redis usec/entry', (us / total).toFixed(2));
  await r.stop();
}
