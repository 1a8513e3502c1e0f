/**
 * The per-key order oracle of partitioned streams (docs/partitions.md "Order"), read from the
 * ledger the consumer processes write (`consumer-process.mjs`: one `H` line per completed call,
 * one `F` line per failed attempt, one host clock). Per key: every entry completed; one call at a
 * time (no call starts before the previous call of its key ended); never an entry completed
 * again after a later entry of its key completed.
 */
import * as fs from 'node:fs';
import type { Redis } from 'ioredis';

/** One handler call from the ledger: completed (`H`) or failed (`F`). */
export interface LedgerCall {
  done: boolean;
  key: string;
  seq: number;
  consumer: string;
  startedAt: number;
  endedAt: number;
}

/** The calls of a ledger whose branded ids are `<key>.<seq>`. */
export function readLedger(ledger: string): LedgerCall[] {
  if (!fs.existsSync(ledger)) return [];
  return fs
    .readFileSync(ledger, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('H ') || line.startsWith('F '))
    .map((line) => {
      const [kind, id, , consumer, , startedAt, endedAt] = line.split(' ');
      const [key, seq] = id.split('.');
      return {
        done: kind === 'H',
        key,
        seq: Number(seq),
        consumer,
        startedAt: Number(startedAt),
        endedAt: Number(endedAt),
      };
    });
}

/** The distinct entries (`key.seq`) that completed. */
export function completedEntries(calls: readonly LedgerCall[]): Set<string> {
  return new Set(calls.filter((c) => c.done).map((c) => `${c.key}.${c.seq}`));
}

/** What the oracle found. */
export interface KeyOrderVerdict {
  /** A call of a key that started before the previous call of its key ended. */
  overlaps: string[];
  /** An entry completed after a later entry of its key had completed. */
  wentBack: string[];
  /** Completed calls of an entry that had completed before (a replay after a crash). */
  reRuns: number;
  /** The most such replays of one key. */
  mostReRunsOfAKey: number;
  /** Keys that miss completed entries (expected `perKey` each). */
  incomplete: string[];
  /** The longest gap of a key that spans one of `marks` (a kill), with its key. */
  longestStall: { ms: number; key: string };
}

/**
 * Checks the per-key rules over every call of `calls`; `perKey` entries were published for each
 * key; `marks` are instants (kills) whose spanning gaps are measured.
 */
export function keyOrderVerdict(
  calls: readonly LedgerCall[],
  perKey: number,
  marks: readonly number[] = [],
): KeyOrderVerdict {
  const byKey = new Map<string, LedgerCall[]>();
  for (const call of calls) byKey.set(call.key, [...(byKey.get(call.key) ?? []), call]);
  const verdict: KeyOrderVerdict = {
    overlaps: [],
    wentBack: [],
    reRuns: 0,
    mostReRunsOfAKey: 0,
    incomplete: [],
    longestStall: { ms: 0, key: '' },
  };
  for (const [key, list] of byKey) {
    list.sort((a, b) => a.startedAt - b.startedAt || a.seq - b.seq);
    const completed = new Set(list.filter((c) => c.done).map((c) => c.seq));
    if (completed.size !== perKey) verdict.incomplete.push(`${key} (${completed.size}/${perKey})`);
    // one at a time: no call starts before the previous call of its key ended
    for (let i = 1; i < list.length; i++) {
      const [prev, next] = [list[i - 1], list[i]];
      if (next.startedAt < prev.endedAt)
        verdict.overlaps.push(
          `${key}: ${next.seq} (${next.consumer}) started before ${prev.seq} (${prev.consumer}) ended`,
        );
      const spans = marks.some((at) => prev.endedAt <= at && at <= next.startedAt);
      if (spans && next.startedAt - prev.endedAt > verdict.longestStall.ms)
        verdict.longestStall = { ms: next.startedAt - prev.endedAt, key };
    }
    // in order: never an entry completed again after a later one of its key completed
    let highest = -1;
    let reRuns = 0;
    const seen = new Set<number>();
    for (const call of list.filter((c) => c.done)) {
      if (call.seq < highest)
        verdict.wentBack.push(
          `${key}: ${call.seq} (${call.consumer}) completed after ${highest} had completed`,
        );
      if (seen.has(call.seq)) reRuns++;
      seen.add(call.seq);
      highest = Math.max(highest, call.seq);
    }
    verdict.reRuns += reRuns;
    verdict.mostReRunsOfAKey = Math.max(verdict.mostReRunsOfAKey, reRuns);
  }
  return verdict;
}

/** Who owns each partition of `group` now, from the lease hash (`null`: free or expired). */
export async function leaseOwners(
  redis: Redis,
  stream: string,
  group: string,
  partitions: number,
): Promise<Array<string | null>> {
  const lease = await redis.hgetall(`{${stream}}:echo-leases:${group}`);
  const [secs, micros] = await redis.time();
  const now = Number(secs) * 1000 + Math.floor(Number(micros) / 1000);
  return Array.from({ length: partitions }, (_, i) => {
    const owner = lease[`o:${i}`];
    return owner && Number(lease[`e:${i}`]) > now ? owner : null;
  });
}
