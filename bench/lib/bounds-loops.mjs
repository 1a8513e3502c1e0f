// The loops of bench/bounds.mjs (its header says what each does) and their scripts; run as a
// child process (BOUNDS_CHILD: the loop, the server, the stream), it drains one pre-filled stream
// with one loop and sends its figures to the parent.
import { Redis } from 'ioredis';

/** Entries per drain (the parent fills as many). */
export const N = Number(process.env.BENCH_BOUNDS_N ?? 100_000);
/** Key groups of the partitioned loop (BENCH_BOUNDS_KEY_GROUPS, 4). */
export const KEY_GROUPS = Number(process.env.BENCH_BOUNDS_KEY_GROUPS ?? 4);
/** `script`: a wave's XACKs in one script call; `xack`: an XACK per partition stream. */
export const WAVE_ACK = process.env.BENCH_BOUNDS_WAVE_ACK ?? 'script';
/** `0`: the partitioned loop without the order rule (one wave per read and key group). */
const KEY_ORDER = process.env.BENCH_BOUNDS_KEY_ORDER !== '0';
export const PARTITIONS = 8;
/** Keys of the partitioned stream. */
export const KEYS = 100;
const COUNT = 100;
export const GROUP = 'g';
const RECORD_PX = '86400000';
export const partitionOf = (stream, p) => `${stream}:p:${p}`;
export const keyOf = (seq) => `acct-${seq % KEYS}`;
const recordKey = (stream, id) => `{${stream}}:echo-dedup:records:${GROUP}:${id}`;

// ---- scripts ---------------------------------------------------------------------------------
// KEYS: streams; ARGV[1] the group, then per stream: how many ids, the ids
const ACK_WAVE = `
local at = 2
for s = 1, #KEYS do
  local n = tonumber(ARGV[at])
  if n > 0 then redis.call('XACK', KEYS[s], ARGV[1], unpack(ARGV, at + 1, at + n)) end
  at = at + 1 + n
end
return 1`;
// KEYS[1] the stream; ARGV group, consumer, count, record key head: the read and its records
const READ_LOOK_UP = `
local reply = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[3],
  'STREAMS', KEYS[1], '>')
if not reply then return {{}, {}} end
local entries = reply[1][2]
local keys = {}
for i, entry in ipairs(entries) do keys[i] = ARGV[4] .. entry[2][2] end
if #keys == 0 then return {entries, {}} end
return {entries, redis.call('MGET', unpack(keys))}`;
// KEYS[1] the stream; ARGV group, PX, record key head, then the entry ids and their branded ids
const ACK_RECORDS = `
local n = (#ARGV - 3) / 2
for i = 1, n do redis.call('SET', ARGV[3] .. ARGV[3 + n + i], '1', 'PX', ARGV[2]) end
redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 4, 3 + n))
return 1`;
// KEYS[1] the stream; ARGV group, PX, record key head, how many entries, their ids, then per entry
// its key and branded id: each key's record kept at the highest id (compare-and-set), then the XACK
const ACK_NEWEST = `
local n = tonumber(ARGV[4])
for i = 1, n do
  local key, id = ARGV[3] .. ARGV[3 + n + 2 * i], ARGV[4 + n + 2 * i]
  local current = redis.call('GET', key)
  if not current or current < id then redis.call('SET', key, id, 'PX', ARGV[2]) end
end
redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 5, 4 + n))
return 1`;
// KEYS[1] the source, KEYS[2] the output; ARGV group, consumer, lowest id, highest id, PX, record
// key head, then per entry: id, delivery count, branded id, output data
const COMMIT = `
local src, group, consumer = KEYS[1], ARGV[1], ARGV[2]
local n = (#ARGV - 6) / 4
local mine = {}
for _, row in ipairs(redis.call('XPENDING', src, group, ARGV[3], ARGV[4], 2 * n, consumer)) do
  mine[row[1]] = row
end
local acked, verdicts = {}, {}
for e = 1, n do
  local at = 7 + (e - 1) * 4
  local id = ARGV[at]
  local row = mine[id]
  if not row or tonumber(row[4]) ~= tonumber(ARGV[at + 1]) then
    verdicts[e] = 'fenced'
  else
    if redis.call('SET', ARGV[6] .. ARGV[at + 2], '1', 'PX', ARGV[5], 'NX') then
      redis.call('XADD', KEYS[2], '*', 'id', ARGV[at + 2] .. ':out', 'data', ARGV[at + 3])
    end
    acked[#acked + 1] = id
    verdicts[e] = 'ok'
  end
end
if #acked > 0 then redis.call('XACK', src, group, unpack(acked)) end
return verdicts`;

// ---- the child: one loop over one prefilled stream ---------------------------------------------
/** Up to COUNT new entries of each of `streams` (no BLOCK: a drained stream answers at once). */
const readNew = (redis, ...streams) =>
  redis.xreadgroup(
    'GROUP',
    GROUP,
    'c',
    'COUNT',
    COUNT,
    'STREAMS',
    ...streams,
    ...streams.map(() => '>'),
  );

const fieldOf = (fields, name) => {
  for (let i = 0; i < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
};

/**
 * Handles the entries of a `dedup` read whose record was not `found` (skips the others), then
 * sends their XACK with a record per id (one script call), into `acks`.
 */
function handleWithRecords(redis, stream, entries, found, sink, acks) {
  const ids = [];
  const branded = [];
  entries.forEach(([id, fields], i) => {
    if (found[i] === null) sink.handle(JSON.parse(fieldOf(fields, 'data')));
    else sink.skip();
    ids.push(id);
    branded.push(fieldOf(fields, 'id'));
  });
  if (ids.length === 0) return;
  const head = recordKey(stream, '');
  acks.push(redis.evalsha(sha.ACK_RECORDS, 1, stream, GROUP, RECORD_PX, head, ...ids, ...branded));
}

const loops = {
  async plain(redis, stream, sink) {
    const read = () => readNew(redis, stream);
    const acks = [];
    let next = read();
    while (sink.handled < N) {
      const reply = await next;
      next = read();
      const entries = reply?.[0]?.[1] ?? [];
      for (const [, fields] of entries) sink.handle(JSON.parse(fieldOf(fields, 'data')));
      if (entries.length) acks.push(redis.xack(stream, GROUP, ...entries.map(([id]) => id)));
      if (acks.length > 8) await acks.shift();
    }
    await Promise.all(acks); // the read in flight is left: a drained stream answers it late
  },

  async dedup(redis, stream, sink) {
    const head = recordKey(stream, '');
    const read = () => {
      const r = {
        reply: readNew(redis, stream),
      };
      // the look-up goes out the moment the read's reply is read
      r.found = r.reply.then((reply) => {
        const entries = reply?.[0]?.[1] ?? [];
        return entries.length ? redis.mget(entries.map(([, f]) => head + fieldOf(f, 'id'))) : [];
      });
      return r;
    };
    const acks = [];
    const ahead = [read(), read()];
    while (sink.handled < N) {
      const current = ahead.shift();
      ahead.push(read());
      const entries = (await current.reply)?.[0]?.[1] ?? [];
      const found = await current.found;
      handleWithRecords(redis, stream, entries, found, sink, acks);
      if (acks.length > 8) await acks.shift();
      // a turn of the event loop: the replies that came while the batch was handled are read
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(acks);
  },

  async newerWins(redis, stream, sink) {
    const head = `{${stream}}:echo-newest:records:${GROUP}:`;
    const read = () => {
      const r = {
        reply: readNew(redis, stream),
        messages: [],
      };
      // decoded and looked up (one MGET of their keys' records) the moment the reply is read
      r.found = r.reply.then((reply) => {
        for (const [id, fields] of reply?.[0]?.[1] ?? []) {
          const message = JSON.parse(fieldOf(fields, 'data'));
          r.messages.push({ id, branded: fieldOf(fields, 'id'), key: message.account, message });
        }
        return r.messages.length ? redis.mget(r.messages.map((m) => head + m.key)) : [];
      });
      return r;
    };
    /** The last wave's XACK on the wire and its keys: their next entries wait for its reply. */
    let inFlight = { keys: new Set(), reply: Promise.resolve() };
    const ahead = [read(), read()];
    while (sink.handled < N) {
      const current = ahead.shift();
      ahead.push(read());
      const found = await current.found;
      // the i-th entry of a key in this read goes in wave i
      const waves = [];
      const seen = new Map();
      current.messages.forEach((m, j) => {
        const i = seen.get(m.key) ?? 0;
        seen.set(m.key, i + 1);
        (waves[i] ??= []).push(j);
      });
      for (const wave of waves) {
        if (wave.some((j) => inFlight.keys.has(current.messages[j].key))) await inFlight.reply;
        const ids = [];
        const pairs = [];
        const keys = new Set();
        for (const j of wave) {
          const m = current.messages[j];
          if (found[j] === null || found[j] < m.branded) sink.handle(m.message);
          else sink.skip();
          ids.push(m.id);
          pairs.push(m.key, m.branded);
          keys.add(m.key);
        }
        const args = [GROUP, RECORD_PX, head, ids.length, ...ids, ...pairs];
        inFlight = { keys, reply: redis.evalsha(sha.ACK_NEWEST, 1, stream, ...args) };
      }
      await new Promise((r) => setImmediate(r));
    }
    await inFlight.reply;
  },

  async dedupInRead(redis, stream, sink) {
    const head = recordKey(stream, '');
    const read = () => redis.evalsha(sha.READ_LOOK_UP, 1, stream, GROUP, 'c', COUNT, head);
    const acks = [];
    let next = read();
    while (sink.handled < N) {
      const [entries, records] = await next;
      next = read();
      handleWithRecords(redis, stream, entries, records, sink, acks);
      if (acks.length > 8) await acks.shift();
      if (!entries.length) await new Promise((r) => setTimeout(r, 1));
    }
    await Promise.all(acks);
  },

  async exactlyOnce(redis, stream, sink) {
    const head = recordKey(stream, '');
    const out = `${stream}:out`;
    const read = () => readNew(redis, stream);
    const commits = [];
    let next = read();
    while (sink.handled < N) {
      const reply = await next;
      next = read();
      const entries = reply?.[0]?.[1] ?? [];
      if (!entries.length) continue;
      const args = [GROUP, 'c', entries[0][0], entries[entries.length - 1][0], RECORD_PX, head];
      for (const [id, fields] of entries) {
        const message = JSON.parse(fieldOf(fields, 'data'));
        sink.handle(message);
        args.push(id, 1, fieldOf(fields, 'id'), JSON.stringify({ ...message, stage: 'b' }));
      }
      commits.push(redis.evalsha(sha.COMMIT, 2, stream, out, ...args));
      if (commits.length > 8) await commits.shift();
    }
    const verdicts = (await Promise.all(commits)).flat();
    if (verdicts.some((v) => v !== 'ok')) throw new Error('a commit was fenced');
  },

  async partitioned(redis, stream, sink) {
    const streams = Array.from({ length: PARTITIONS }, (_, p) => partitionOf(stream, p));
    const read = () => readNew(redis, ...streams);
    // per key group: the reply of its last wave's XACK script, and the chain of its waves
    const acked = Array.from({ length: KEY_GROUPS }, () => Promise.resolve());
    const chains = Array.from({ length: KEY_GROUPS }, () => Promise.resolve());
    const runWaves = async (g, waves) => {
      for (const wave of waves) {
        if (KEY_ORDER) await acked[g];
        const ids = streams.map(() => []);
        for (const [p, id, fields] of wave) {
          sink.handle(JSON.parse(fieldOf(fields, 'data')));
          ids[p].push(id);
        }
        let ack;
        if (WAVE_ACK === 'xack') {
          const sent = ids.flatMap((list, p) =>
            list.length ? [redis.xack(streams[p], GROUP, ...list)] : [],
          );
          ack = Promise.all(sent);
        } else {
          const args = [GROUP];
          for (const list of ids) args.push(list.length, ...list);
          ack = redis.evalsha(sha.ACK_WAVE, PARTITIONS, ...streams, ...args);
        }
        // without the order rule nothing waits for it, but every reply is still read
        acked[g] = KEY_ORDER ? ack : Promise.all([acked[g], ack]);
      }
    };
    let next = read();
    const before = [];
    while (sink.handled < N) {
      const reply = await next;
      next = read();
      // the waves of each key group: the i-th entry of every key of the group in wave i
      const waves = Array.from({ length: KEY_GROUPS }, () => []);
      const seen = new Map();
      for (const [name, entries] of reply ?? []) {
        const p = streams.indexOf(name);
        for (const [id, fields] of entries) {
          const key = fieldOf(fields, 'pkey');
          const i = KEY_ORDER ? (seen.get(key) ?? 0) : 0;
          seen.set(key, i + 1);
          const g = Number(key.slice(5)) % KEY_GROUPS;
          (waves[g][i] ??= []).push([p, id, fields]);
        }
      }
      // two reads' waves in hand at most (a loop bounds what it holds): the key groups need not
      // meet at every read
      if (before.length >= 2) await Promise.all(before.shift());
      before.push(waves.map((w, g) => (chains[g] = chains[g].then(() => runWaves(g, w)))));
    }
    await Promise.all(chains);
    await Promise.all(acked);
  },
};
const sha = {};

async function child() {
  const { url, loop, stream } = JSON.parse(process.env.BOUNDS_CHILD);
  const redis = new Redis(url, { enableAutoPipelining: false });
  for (const name of ['ACK_WAVE', 'READ_LOOK_UP', 'ACK_RECORDS', 'ACK_NEWEST', 'COMMIT'])
    sha[name] = await redis.script(
      'LOAD',
      { ACK_WAVE, READ_LOOK_UP, ACK_RECORDS, ACK_NEWEST, COMMIT }[name],
    );
  const sink = {
    handled: 0,
    sum: 0,
    skipped: 0,
    handle(m) {
      this.handled++;
      this.sum += m.qty;
    },
    skip() {
      this.handled++;
      this.skipped++;
    },
  };
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await loops[loop](redis, stream, sink);
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  process.send({
    seconds,
    cpu: (cpu.user + cpu.system) / 1e6,
    handled: sink.handled,
    skipped: sink.skipped,
  });
  redis.disconnect();
}

if (process.env.BOUNDS_CHILD) await child();
