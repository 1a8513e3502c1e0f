#!/usr/bin/env node
// Where ioredis 6 spends more than ioredis 5 on a drain: the reply parser alone, outside any loop.
//
//   node bench/tools/decoder-ab.mjs <ioredis 5 package dir>   (e.g. .bench/ab/io5/node_modules/ioredis)
//   DECODER=<modified copy of ioredis 6's built/resp/decoder.js> ...   also measures that copy
//
// Takes the bytes of real XREAD replies (the shape of XREADGROUP's) (COUNT 100 of the bench's ~200-byte entries) from a
// throw-away redis-server, under RESP2 and under RESP3, and feeds them, as they came off the socket,
// to each client's reply path minus the socket: ioredis 5 = redis-parser (returnBuffers) +
// convertBufferToString; ioredis 6 = its RESP decoder (the type mapping its DataHandler uses) +
// convertBufferToString. Reports CPU µs per entry, median of ROUNDS alternating rounds.
import { createRequire } from 'node:module';
import net from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRedis } from '../lib/redis-server.mjs';
import { streamFields } from '../lib/payload.mjs';
import { median } from '../lib/stats.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const io5Dir = process.argv[2] ? resolve(process.argv[2]) : null;
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const REPLIES = Number(process.env.REPLIES ?? 2000); // x 100 entries per round
const COUNT = 100;

/** The raw bytes of `XREADGROUP ... COUNT 100` replies under `protocol`, as read off the socket. */
async function replyBytes(url, protocol) {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  await new Promise((r) => socket.once('connect', r));
  const chunks = [];
  socket.on('data', (d) => chunks.push(d));
  const send = (...args) =>
    socket.write(
      `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`).join('')}`,
    );
  send('HELLO', protocol);
  await new Promise((r) => setTimeout(r, 100));
  chunks.length = 0;
  // XREAD's reply has the shape of XREADGROUP's (a map of stream -> entries under RESP3)
  send('XREAD', 'COUNT', COUNT, 'STREAMS', 's', '0');
  await new Promise((r) => setTimeout(r, 200));
  socket.destroy();
  return chunks; // the chunk boundaries of a real read
}

const io6Require = createRequire(join(root, 'node_modules', 'ioredis', 'package.json'));
const { Decoder, RESP_TYPES: T } = io6Require('./built/resp/decoder');
const io6Convert = io6Require('./built/utils').convertBufferToString;
// RESP3 answers XREAD(GROUP) with a map: ioredis 6 re-pairs it into the RESP2 shape
const { wrapStreamMapPairs } = io6Require('./built/replyTransformers');
// as ioredis 6's DataHandler sets it for the default replyMapping ('legacy')
const legacyTypeMapping = {
  [T.SIMPLE_STRING]: Buffer,
  [T.BLOB_STRING]: Buffer,
  [T.VERBATIM_STRING]: Buffer,
  [T.BIG_NUMBER]: String,
  [T.DOUBLE]: Buffer,
  [T.BOOLEAN]: Number,
  [T.MAP]: Array,
  [T.SET]: Array,
};

function io6Parser(onReply, protocol, DecoderClass = Decoder) {
  const decoder = new DecoderClass({
    getTypeMapping: () => legacyTypeMapping,
    onReply: (reply) => {
      const strings = io6Convert(reply, 'utf8');
      onReply(protocol === 3 ? wrapStreamMapPairs(strings) : strings);
    },
    onErrorReply: (err) => {
      throw err;
    },
    onPush: () => undefined,
  });
  return (chunk) => decoder.write(chunk);
}

function io5Parser(onReply) {
  const req = createRequire(join(io5Dir, 'package.json'));
  const RedisParser = req('redis-parser');
  const convert = req('./built/utils').convertBufferToString;
  const parser = new RedisParser({
    returnBuffers: true,
    returnReply: (reply) => onReply(convert(reply, 'utf8')),
    returnError: (err) => {
      throw err;
    },
    returnFatalError: (err) => {
      throw err;
    },
  });
  return (chunk) => parser.execute(chunk);
}

/** CPU µs per entry to parse REPLIES replies of `chunks` with `make`. */
function measure(make, chunks, protocol) {
  let entries = 0;
  let sink = 0;
  const feed = make((reply) => {
    // [[stream, [[id, [f, v, f, v]], ...]]]: the library reads exactly this
    const list = reply[0][1];
    entries += list.length;
    sink += list[list.length - 1][1][3].length;
  }, protocol);
  for (let i = 0; i < 200; i++) for (const c of chunks) feed(c); // warm-up
  entries = 0;
  const t0 = process.cpuUsage();
  for (let i = 0; i < REPLIES; i++) for (const c of chunks) feed(c);
  const t = process.cpuUsage(t0);
  if (sink === 0) throw new Error('nothing parsed');
  return (t.user + t.system) / entries;
}

const redis = await startRedis();
let bytes;
try {
  const p = redis.admin.pipeline();
  for (let seq = 0; seq < COUNT; seq++) p.xadd('s', '*', ...streamFields(seq));
  await p.exec();
  bytes = { 2: await replyBytes(redis.url, 2), 3: await replyBytes(redis.url, 3) };
} finally {
  await redis.stop();
}
for (const protocol of [2, 3]) {
  const size = bytes[protocol].reduce((a, c) => a + c.length, 0);
  console.log(`RESP${protocol} reply: ${size} bytes in ${bytes[protocol].length} chunk(s)`);
}

const cases = [
  ['ioredis 6 decoder, RESP3', io6Parser, 3],
  ['ioredis 6 decoder, RESP2', io6Parser, 2],
];
if (io5Dir) cases.push(['ioredis 5 redis-parser, RESP2', io5Parser, 2]);
// DECODER=<a modified copy of ioredis 6's built/resp/decoder.js>: the same path with that decoder
if (process.env.DECODER) {
  const Other = createRequire(import.meta.url)(resolve(process.env.DECODER)).Decoder;
  cases.push(['DECODER copy, RESP3', (onReply, p) => io6Parser(onReply, p, Other), 3]);
}
const results = new Map(cases.map(([name]) => [name, []]));
for (let round = 0; round < ROUNDS; round++)
  for (const [name, make, protocol] of cases)
    results.get(name).push(measure(make, bytes[protocol], protocol));
console.log(
  `\nCPU µs per entry (median [min-max] of ${ROUNDS} rounds of ${REPLIES} x ${COUNT} entries):`,
);
for (const [name, xs] of results)
  console.log(
    `  ${name.padEnd(32)} ${median(xs).toFixed(3)} [${Math.min(...xs).toFixed(3)}-${Math.max(...xs).toFixed(3)}]`,
  );
