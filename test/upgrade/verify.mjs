// The checks of the upgrade test (test/upgrade/run.mjs): what the scenario recorded, against what
// at-least-once permits.
import { PLAIN, PART, GROUP, KILLED, payloadOf } from './layout.mjs';

/**
 * What at-least-once permits here. An entry is acked only after its handler returned, so a process
 * that dies leaves pending every entry it read and did not ack, handled or not: the process that
 * recovers them (XAUTOCLAIM after minIdleMs on the plain stream; the new owner's claim of the
 * partition's PEL after the lease ended) may handle them again. The killed process's PEL is read
 * right after the kill, before anyone can claim it, so the bound is exact:
 * - a handling after an entry's first is allowed only when the handling before it was by the
 *   killed process and the entry was in its PEL at the kill (so such replays are at most its
 *   in-hand count). A read-batch bound (batchSize per loop) does not hold for v0.1.0: its loops
 *   read ahead, keep an entry waiting for its retry in hand while the next batch runs, and a
 *   partition loop acks a held key's lane with a later read, so up to two batches and the lanes
 *   can be handled and unacked at once (seen: 11 on the plain stream, 22 on a partition);
 * - a graceful stop (old-B, SIGTERM) and a partition hand-over duplicate nothing (both
 *   versions' docs), with one exception in v0.1.0: V010_HANDOVER;
 * - on the dead-letter path (copy, @DeadLetter, XACK) a kill between the copy and the XACK
 *   copies the entry again: a second letter is allowed only of an entry in that PEL.
 */
/*
 * V010_HANDOVER, a defect of v0.1.0 the old processes of this deploy bring along (also seen with
 * v0.1.0 alone: 3 of 10 runs of this scenario with all four processes on v0.1.0; 0 of 10 with all
 * four on the current package). A held key's lane adds the acks of its run to the loop's ack
 * buffer only when the whole run ended (Delivery.processHeld), and a stopping partition loop
 * flushes that buffer before its lanes end (StreamConsumer.run(): acks.flush(), then
 * heldKeys.idle()). A lane run still going when the partition is given up (a graceful stop, or a
 * hand-over to a joining process) ends after the last flush: its entries were handled and are
 * never acked, and the partition's next owner claims them and runs them again. Fixed in 1fab716
 * (heldKeys.idle() before acks.flush()). Allowed here, and counted in the output: a second
 * handling, on a partition, by another process, claimed from the PEL (attempts > 1), of an entry
 * first handled by an old process that was not killed, after that process's last handling on
 * that partition (it had given the partition up).
 */

export function verify(r) {
  // a failure: its text, and its kind (failures of one kind are printed as a count and examples)
  const failures = r.problems.map((msg) => ({ msg, kind: msg }));
  const fail = (msg, kind = msg) => failures.push({ msg, kind });
  const facts = [];
  const key = (stream, entryId) => `${stream} ${entryId}`;
  const inHand = new Set(
    Object.entries(r.inHand).flatMap(([s, ids]) => ids.map((id) => key(s, id))),
  );
  const inHandCount = Object.values(r.inHand).reduce((n, ids) => n + ids.length, 0);
  const loopStream = (rec) => (rec.stream === 'plain' ? PLAIN : `${PART}:p:${rec.partition}`);
  const published = [...r.plan.old, ...r.plan.new];
  const failing = published.filter((p) => p.payload.fail);
  const good = published.filter((p) => !p.payload.fail);

  // the scenario did what it says
  if (r.receipts.length !== published.length) {
    fail(`published ${r.receipts.length} entries, planned ${published.length}`);
  }
  if (inHandCount === 0) fail(`scenario: ${KILLED} had nothing pending when it was killed`);
  if (r.leasesLeft.length === 0)
    fail(`scenario: ${KILLED} held no partition lease when it was killed`);
  if (Object.values(r.backlog).every((s) => s && s.lag === 0)) {
    fail(`scenario: the streams were drained when ${KILLED} was killed`);
  }
  facts.push(
    `${KILLED} killed with ${inHandCount} entries in hand (${Object.entries(r.inHand)
      .filter(([, ids]) => ids.length)
      .map(([s, ids]) => `${s}: ${ids.length}`)
      .join(', ')}), leases of partitions [${r.leasesLeft}]`,
  );

  // at: the order of the RPUSHes; original: handlings of published entries, redriven: of copies
  const handled = r.handled.map((h, at) => ({ ...h, at }));
  const original = handled.filter((h) => !h.redriven);
  const redriven = handled.filter((h) => h.redriven);
  // where each process last handled an entry of each partition
  const lastOn = new Map();
  for (const h of original) if (h.stream === 'part') lastOn.set(`${h.proc} ${h.partition}`, h.at);
  const byPid = new Map();
  for (const h of original) byPid.set(h.pid, [...(byPid.get(h.pid) ?? []), h]);

  // every non-failing entry handled at least once (a failing one is handled only once healed:
  // checked with the redriven letters below)
  const missing = good.filter((p) => !byPid.has(p.payload.pid)).map((p) => p.payload.pid);
  if (missing.length)
    fail(`${missing.length} published entries never handled: ${missing.slice(0, 10).join(', ')}`);

  // duplicates: each handling after an entry's first must be a replay at-least-once permits
  // (see above): of an entry the killed process had in hand, or (v0.1.0's stop, see
  // V010_HANDOVER) of a partition entry an old process left unacked when it gave its partition up
  const replays = { killed: new Map(), handOver: new Map() }; // loop stream -> count
  const allowedReplay = new Set(); // the records that are allowed replays
  for (const [pid, hs] of byPid) {
    for (let i = 1; i < hs.length; i++) {
      const [prev, h] = [hs[i - 1], hs[i]];
      const where = key(loopStream(prev), prev.entryId);
      let kind;
      if (prev.proc === KILLED && inHand.has(where)) kind = 'killed';
      else if (
        prev.role === 'old' &&
        prev.proc !== KILLED &&
        h.stream === 'part' &&
        h.proc !== prev.proc &&
        h.attempts > 1 &&
        lastOn.get(`${prev.proc} ${h.partition}`) < h.at // the old process had left the partition
      ) {
        kind = 'handOver';
      }
      if (!kind) {
        fail(
          `${pid} (${where}) handled again by ${h.proc} (attempts ${h.attempts}) after ${prev.proc}: ` +
            `not a replay of an entry ${KILLED} had in hand`,
          'handled again, not an allowed replay',
        );
        continue;
      }
      allowedReplay.add(h);
      replays[kind].set(loopStream(h), (replays[kind].get(loopStream(h)) ?? 0) + 1);
    }
  }
  const sum = (m) => [...m.values()].reduce((n, c) => n + c, 0);
  const list = (m) => [...m].map(([s, n]) => `${s}: ${n}`).join(', ') || 'none';
  facts.push(
    `${sum(replays.killed)} replays of ${KILLED}'s ${inHandCount} entries in hand (${list(replays.killed)})`,
  );
  facts.push(
    `${sum(replays.handOver)} replays of entries an old process left unacked when it gave up ` +
      `a partition (${list(replays.handOver)}): v0.1.0's defect, see V010_HANDOVER`,
  );

  // per key order: each process handles a key's entries in order, and the seq numbers handled
  // never go back except for an allowed replay (so first handlings are in order too)
  const byKey = new Map();
  for (const h of original.filter((h) => h.stream === 'part'))
    byKey.set(h.key, [...(byKey.get(h.key) ?? []), h]);
  let wentBack = 0;
  for (const [k, hs] of byKey) {
    const partitions = new Set(hs.map((h) => h.partition));
    if (partitions.size !== 1) fail(`key ${k} handled from partitions ${[...partitions]}`);
    const last = new Map(); // proc -> its last handling of k
    let top;
    for (const h of hs) {
      const before = last.get(h.proc);
      if (before && h.seq <= before.seq) {
        wentBack++;
        fail(
          `key ${k}: ${h.proc} handled seq ${h.seq} after seq ${before.seq}`,
          'a process went back in the order of a key',
        );
      }
      last.set(h.proc, h);
      if (top && h.seq <= top.seq && !allowedReplay.has(h)) {
        wentBack++;
        fail(
          `key ${k}: seq ${h.seq} handled by ${h.proc} after seq ${top.seq} by ${top.proc}, not a replay`,
          'the seq of a key went back, not a replay',
        );
      }
      if (!top || h.seq > top.seq) top = h;
    }
  }
  facts.push(`${byKey.size} keys, each in order (${wentBack} violations)`);

  // the group was mixed
  const handledBy = (pred) => original.filter(pred).length;
  if (handledBy((h) => h.role === 'old' && h.origin === 'new') === 0) {
    fail('scenario: no old consumer handled an entry of the new producer');
  }
  if (handledBy((h) => h.role === 'new' && h.origin === 'old') === 0) {
    fail('scenario: no new consumer handled an entry of the old producer');
  }
  facts.push(
    `old consumers handled ${handledBy((h) => h.role === 'old' && h.origin === 'new')} entries of the new producer, ` +
      `new consumers ${handledBy((h) => h.role === 'new' && h.origin === 'old')} of the old producer; ` +
      `${KILLED}'s in-hand entries recovered by ${[
        ...new Set(
          original
            .filter((h) => h.proc !== KILLED && inHand.has(key(loopStream(h), h.entryId)))
            .map((h) => h.proc),
        ),
      ].join(', ')}`,
  );

  // dead letters: each failing entry once (twice only if the killed process had it in hand)
  const allLetters = [...r.letters.plain, ...r.letters.part];
  const lettersByPid = new Map();
  for (const l of allLetters) lettersByPid.set(l.pid, [...(lettersByPid.get(l.pid) ?? []), l]);
  const failingPids = new Set(failing.map((p) => p.payload.pid));
  for (const l of allLetters) {
    if (!failingPids.has(l.pid))
      fail(
        `dead letter ${l.entryId} of a good entry (${l.pid}): ${JSON.stringify(l.fields)}`,
        'dead letters of good entries',
      );
    else if (l.fields.dlq_reason !== 'max_deliveries')
      fail(
        `dead letter of ${l.pid}: reason ${l.fields.dlq_reason}`,
        'dead letters with an unexpected reason',
      );
  }
  for (const p of failing) {
    const ls = lettersByPid.get(p.payload.pid) ?? [];
    const stream = p.key === undefined ? PLAIN : undefined;
    if (ls.length === 0)
      fail(`${p.payload.pid} is no dead letter`, 'failing entries that are no dead letter');
    else if (ls.length > 1) {
      const source = ls[0].fields.dlq_stream;
      const partStream =
        stream ?? (/:p:\d+$/.test(source) ? source : `${PART}:p:${ls[0].fields.dlq_partition}`);
      if (ls.length > 2 || !inHand.has(key(partStream, ls[0].fields.dlq_entry_id))) {
        fail(
          `${p.payload.pid} dead-lettered ${ls.length} times, not an entry ${KILLED} had in hand`,
          'failing entries dead-lettered more than once',
        );
      }
    }
  }
  // the letters written by the old version: plain ones (same fields) and partitioned ones in
  // v0.1.0's form (dlq_stream names the partition, no dlq_partition / dlq_key)
  const legacy = r.letters.part.filter((l) => l.fields.dlq_partition === undefined);
  const current = r.letters.part.filter((l) => l.fields.dlq_partition !== undefined);
  const deadBy = (role, stream) =>
    r.deadRecords.filter((d) => d.role === role && d.stream.startsWith(stream)).length;
  if (deadBy('old', PLAIN) === 0)
    fail(`scenario: no dead letter of ${PLAIN} written by an old process`);
  if (legacy.length === 0) fail(`scenario: no dead letter of ${PART} in v0.1.0's form`);
  facts.push(
    `${allLetters.length} dead letters for ${failing.length} failing entries: ${PLAIN}:dlq ${r.letters.plain.length} ` +
      `(by old ${deadBy('old', PLAIN)}, new ${deadBy('new', PLAIN)}), ${PART}:dlq ${r.letters.part.length} ` +
      `(${legacy.length} in v0.1.0's form, ${current.length} in the current one)`,
  );

  // the new admin lists every letter, old ones too, and redrives them all
  for (const [name, stream, raw] of [
    ['plain', PLAIN, r.letters.plain],
    ['part', PART, r.letters.part],
  ]) {
    const listed = r.admin.before[stream];
    const listedIds = new Set(listed.map((l) => l.entryId));
    const unlisted = raw.filter((l) => !listedIds.has(l.entryId));
    if (unlisted.length || listed.length !== raw.length) {
      fail(
        `new EchoStreamAdmin.deadLetters('${stream}') listed ${listed.length} of ${raw.length} letters; missing: ${unlisted
          .slice(0, 5)
          .map((l) => `${l.entryId} ${JSON.stringify(l.fields)}`)
          .join('; ')}`,
      );
    }
    for (const l of listed) {
      const { pid, key: payloadKey } = payloadOf(l.fields);
      if (l.stream !== stream)
        fail(
          `listed letter ${l.entryId} of ${pid}: stream ${l.stream}, expected ${stream}`,
          'listed letters with a wrong stream',
        );
      if (name === 'part') {
        if (l.key !== undefined && l.key !== payloadKey)
          fail(
            `listed letter ${l.entryId}: key ${l.key}, payload key ${payloadKey}`,
            'listed letters with a wrong key',
          );
        if (l.partition === undefined)
          fail(
            `listed letter ${l.entryId} of ${pid}: no partition`,
            'listed letters without a partition',
          );
      }
    }
    if (r.admin.redriven[stream] !== raw.length) {
      fail(
        `new EchoStreamAdmin.redrive('${stream}') redrove ${r.admin.redriven[stream]} of ${raw.length} letters`,
      );
    }
    if (r.admin.after[stream].length !== 0)
      fail(`${r.admin.after[stream].length} letters of ${stream} left after the redrive`);
    if (r.dlqLengths[name] !== 0)
      fail(`${stream}:dlq holds ${r.dlqLengths[name]} entries after the redrive`);
  }

  // each redriven letter handled once, by a new process; a keyed one in its key's partition
  const redrivenByPid = new Map();
  for (const h of redriven) redrivenByPid.set(h.pid, [...(redrivenByPid.get(h.pid) ?? []), h]);
  for (const p of failing) {
    const hs = redrivenByPid.get(p.payload.pid) ?? [];
    const letters = (lettersByPid.get(p.payload.pid) ?? []).length;
    if (hs.length !== letters)
      fail(
        `${p.payload.pid}: ${letters} letter(s) redriven, handled ${hs.length} times`,
        'redriven letters not handled once per letter',
      );
    for (const h of hs) {
      if (h.role !== 'new')
        fail(
          `redriven ${p.payload.pid} handled by ${h.proc}`,
          'redriven letters handled by an old process',
        );
      if (h.stream === 'part') {
        const own = byKey.get(h.key)?.[0]?.partition;
        if (own !== undefined && h.partition !== own)
          fail(
            `redriven ${p.payload.pid} in partition ${h.partition}, its key's is ${own}`,
            'redriven letters in another partition',
          );
      }
    }
  }
  facts.push(`${redriven.length} handlings of redriven letters`);

  // nothing pending, nothing behind
  for (const [stream, s] of Object.entries(r.finalState)) {
    if (!s || s.pending !== 0 || s.lag !== 0)
      fail(`${stream} group ${GROUP} at the end: ${JSON.stringify(s)}`);
  }
  facts.push('every group: pending 0, lag 0');
  return { failures, facts };
}
