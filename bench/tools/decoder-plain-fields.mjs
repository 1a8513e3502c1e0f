#!/usr/bin/env node
// Writes a copy of ioredis 6's RESP decoder (node_modules/ioredis/built/resp/decoder.js) with its
// down-levelled private fields (`__classPrivateFieldGet(this, _Decoder_cursor, "f")`: two WeakMap
// lookups per access) turned into plain properties (`this._cursor`), nothing else changed: the
// measurement behind the README's "ioredis 6 and RESP3". A bench artefact, never shipped.
//
//   node bench/tools/decoder-plain-fields.mjs <out.js>
//   DECODER=<out.js> node bench/tools/decoder-ab.mjs <ioredis 5 dir>     the decoder alone
//   (or copy node_modules/ioredis to .bench/ab/<tag>/node_modules/ioredis, put <out.js> in place of
//   its built/resp/decoder.js, copy dist/ to .bench/ab/<tag>/dist: BENCH_LIB_VARIANTS=<tag>=...)
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const out = process.argv[2];
if (!out) {
  console.error('usage: node bench/tools/decoder-plain-fields.mjs <out.js>');
  process.exit(2);
}
const dir = join(root, 'node_modules', 'ioredis', 'built', 'resp');
let src = readFileSync(join(dir, 'decoder.js'), 'utf8');

/** The top-level arguments of the call whose '(' is at `open`, and the index after its ')'. */
function callArgs(text, open) {
  const args = [];
  let depth = 0;
  let start = open + 1;
  for (let k = open; k < text.length; k++) {
    const c = text[k];
    if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') {
      depth--;
      if (depth === 0) {
        args.push(text.slice(start, k).trim());
        return { args, end: k + 1 };
      }
    } else if (c === ',' && depth === 1) {
      args.push(text.slice(start, k).trim());
      start = k + 1;
    }
  }
  throw new Error('unbalanced call');
}

const field = (name) => `_${name.replace(/^_Decoder_/, '')}`;
for (let pass = 0; pass < 8; pass++) {
  let changed = false;
  for (const helper of ['__classPrivateFieldGet', '__classPrivateFieldSet']) {
    let at = 0;
    for (;;) {
      const i = src.indexOf(`${helper}(`, at);
      if (i < 0) break;
      if (src.slice(Math.max(0, i - 4), i) === 'var ' || src[i - 1] === '.') {
        at = i + helper.length;
        continue; // the helper's own definition
      }
      const { args, end } = callArgs(src, i + helper.length);
      // innermost first: leave calls whose arguments hold another helper call for a later pass
      if (args.some((a) => a.includes('__classPrivateField'))) {
        at = i + helper.length;
        continue;
      }
      const [self, state, kindOrValue, fn] = args;
      const text =
        helper === '__classPrivateFieldGet'
          ? kindOrValue === '"m"'
            ? fn // a private method: the function itself
            : `${self}.${field(state)}`
          : `(${self}.${field(state)} = ${kindOrValue})`;
      src = src.slice(0, i) + text + src.slice(end);
      changed = true;
      at = i + text.length;
    }
  }
  if (!changed) break;
}
src = src
  .replace('_Decoder_instances.add(this);', '')
  .replace(/_Decoder_(cursor|next|pushTypeMapping)\.set\(this, ([^;]*)\);/g, 'this._$1 = $2;')
  .replace(
    'require("./verbatim-string")',
    `require(${JSON.stringify(join(dir, 'verbatim-string'))})`,
  )
  .replace('require("./errors")', `require(${JSON.stringify(join(dir, 'errors'))})`);
const left = (src.match(/__classPrivateField(Get|Set)\(this/g) ?? []).length;
if (left > 0) throw new Error(`${left} private-field accesses left`);
writeFileSync(out, src);
console.log(`wrote ${out}`);
