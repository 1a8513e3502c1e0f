/**
 * The oracle of the fault suite (issue 5), after Kafka's verifiable consumer:
 *
 * - a producer that records every ACKNOWLEDGED write (an XADD whose reply came back), each with a
 *   fresh branded id (a failed XADD is never retried under the same id: its fate is unknown, so a
 *   retry under the same id would fake a duplicate);
 * - the ledgers: the handled ledger (one `H <id> ...` line per handler call that completed, written
 *   O_APPEND before the handler returns) and the dead-letter stream;
 * - the checks, on a quiet system (faults healed, nothing in flight):
 *   (1) no loss: every acknowledged write is in the handled ledger or in the dead-letter stream;
 *   (2) no ack without handling: every entry of the stream that the group delivered and that is
 *       neither pending (XPENDING) nor dead-lettered is in the handled ledger;
 *   (3) nothing stuck: XPENDING of the group is 0 (and the group has no lag);
 *   (4) duplicates (ids handled more than once) are counted and reported; a fault-free run with
 *       clean shutdowns must have none;
 *   (5) no early retry (issue 11): after a failed attempt (an `F` ledger line with the time its
 *       retry policy makes the next attempt due), no later attempt of that entry started before
 *       that time, by any consumer.
 */
import * as fs from 'node:fs';
import type { Redis } from 'ioredis';
import { BrandedIdGenerator } from '../../../lib/codec/branded-id';
import { waitFor } from '../../support/wait-for';

/** One line of a handled ledger. */
export interface LedgerRecord {
  id: string;
  entryId: string;
  consumer: string;
  attempts: number;
  startedAt: number;
  endedAt: number;
  pid: number;
}

/** One failed attempt: an `F` line of a ledger. */
export interface FailureRecord extends LedgerRecord {
  /** When the retry policy makes the next attempt due (`endedAt` = when it failed). */
  dueAt: number;
}

function ledgerLines(file: string): string[] {
  try {
    return fs.readFileSync(file, 'utf8').split('\n');
  } catch {
    return [];
  }
}

/** The failed attempts of a ledger (`F <id> <entryId> <consumer> <attempts> <start> <failedAt> <pid> <dueAt>`). */
export function readFailures(file: string): FailureRecord[] {
  const out: FailureRecord[] = [];
  for (const line of ledgerLines(file)) {
    const parts = line.trim().split(' ');
    if (parts[0] !== 'F' || parts.length < 9) continue;
    out.push({
      id: parts[1],
      entryId: parts[2],
      consumer: parts[3],
      attempts: Number(parts[4]),
      startedAt: Number(parts[5]),
      endedAt: Number(parts[6]),
      pid: Number(parts[7]),
      dueAt: Number(parts[8]),
    });
  }
  return out;
}

/** Parses a handled ledger file (`H <id> <entryId> <consumer> <attempts> <start> <end> <pid>`). */
export function readLedger(file: string): LedgerRecord[] {
  const out: LedgerRecord[] = [];
  for (const line of ledgerLines(file)) {
    const parts = line.trim().split(' ');
    if (parts[0] !== 'H' || parts.length < 8) continue;
    out.push({
      id: parts[1],
      entryId: parts[2],
      consumer: parts[3],
      attempts: Number(parts[4]),
      startedAt: Number(parts[5]),
      endedAt: Number(parts[6]),
      pid: Number(parts[7]),
    });
  }
  return out;
}

/**
 * Publishes JSON entries in the package's wire format (`id` = branded id, `data` = JSON) with
 * plain ioredis, and records every acknowledged write.
 */
export class OracleProducer {
  /** Branded id -> entry id, for every XADD that returned. */
  readonly acked = new Map<string, string>();
  /** Branded ids whose XADD failed (unknown fate: it may or may not be in the stream). */
  readonly failed = new Set<string>();
  private readonly ids = new BrandedIdGenerator();
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly redis: Redis,
    readonly stream: string,
  ) {}

  /** One XADD; returns the branded id when acknowledged, `null` when it failed. */
  async publish(payload: unknown): Promise<string | null> {
    const id = this.ids.next();
    try {
      const entryId = await this.redis.xadd(
        this.stream,
        '*',
        'id',
        id,
        'data',
        JSON.stringify(payload),
      );
      this.acked.set(id, String(entryId));
      return id;
    } catch {
      this.failed.add(id);
      return null;
    }
  }

  /**
   * Publishes `count` entries in one MULTI/EXEC: a parked consumer is served once, after EXEC,
   * so one XREADGROUP (COUNT >= `count`) delivers them all as one batch.
   */
  async publishAtomically(count: number): Promise<string[]> {
    const ids = Array.from({ length: count }, () => this.ids.next());
    const multi = this.redis.multi();
    ids.forEach((id, n) => multi.xadd(this.stream, '*', 'id', id, 'data', JSON.stringify({ n })));
    const results = (await multi.exec()) ?? [];
    const out: string[] = [];
    results.forEach(([err, entryId], n) => {
      if (err) this.failed.add(ids[n]);
      else {
        this.acked.set(ids[n], String(entryId));
        out.push(ids[n]);
      }
    });
    return out;
  }

  /** Publishes `count` entries one after another (each waits for its reply). */
  async publishMany(count: number): Promise<string[]> {
    const out: string[] = [];
    for (let n = 0; n < count; n++) {
      const id = await this.publish({ n });
      if (id !== null) out.push(id);
    }
    return out;
  }

  /**
   * Starts a background run of `total` attempts at about `perSecond`, in bursts of `burst`
   * concurrent XADDs (bursts make consumers read multi-entry batches). Failed writes (Redis down)
   * are paced by `retryPauseMs` and not retried under the same id. `stop()` or completion ends it.
   */
  startSteady(
    total: number,
    perSecond: number,
    options: number | { burst?: number; retryPauseMs?: number } = {},
  ): void {
    // a bare number is `retryPauseMs` (the first form of this signature)
    const { burst = 1, retryPauseMs = 50 } =
      typeof options === 'number' ? { retryPauseMs: options } : options;
    this.stopped = false;
    this.running = (async () => {
      const started = Date.now();
      for (let n = 0; n < total && !this.stopped; n += burst) {
        const due = started + (n * 1000) / perSecond;
        const wait = due - Date.now();
        if (wait > 0) await sleep(wait);
        const size = Math.min(burst, total - n);
        const ids = await Promise.all(
          Array.from({ length: size }, (_, i) => this.publish({ n: n + i, at: Date.now() })),
        );
        if (ids.includes(null)) await sleep(retryPauseMs);
      }
    })();
  }

  /** Resolves when the background run is over. */
  async done(): Promise<void> {
    await this.running;
  }

  /** Ends the background run early. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }
}

/** A dead letter as found in the dead-letter stream. */
export interface DeadLetterRecord {
  id: string | undefined;
  sourceEntryId: string;
  reason: string;
}

/** What the oracle looks at. */
export interface OracleInput {
  redis: Redis;
  stream: string;
  group: string;
  /** The dead-letter stream (`${stream}:dlq` by default). */
  deadLetterStream?: string;
  /** Handled ledger files. */
  ledgers: string[];
  /** Acknowledged writes: branded id -> entry id. */
  acked: ReadonlyMap<string, string>;
}

/**
 * The oracle's input for `group` of `producer`'s stream: what `producer` wrote, what the loops
 * recorded in `ledger`, read over `redis`.
 */
export function oracleInput(
  redis: Redis,
  producer: OracleProducer,
  ledger: string,
  group = 'g',
): OracleInput {
  return { redis, stream: producer.stream, group, ledgers: [ledger], acked: producer.acked };
}

/** The oracle's verdict. */
export interface OracleReport {
  acknowledged: number;
  /** Distinct ids handled at least once. */
  handled: number;
  /** Handler completions recorded (duplicates included). */
  handledRecords: number;
  deadLettered: number;
  /** (1) acknowledged writes in neither ledger. */
  lost: string[];
  /** (2) delivered entries neither pending nor dead-lettered and not in the ledger. */
  ackedWithoutRecord: string[];
  /** (3) XPENDING count of the group. */
  pending: number;
  /** Entries of the stream the group has not been delivered yet. */
  undelivered: number;
  /** (4) extra handler completions: sum over ids of (times handled - 1). */
  duplicates: number;
  /** Ids handled more than once, with their count (at most 20 listed). */
  duplicateIds: Array<[string, number]>;
  /** Ids that were both handled and dead-lettered. */
  handledAndDeadLettered: number;
  /** Failed attempts recorded (`F` lines). */
  failedAttempts: number;
  /** (5) later attempts that started before the retry of a failed attempt was due. */
  earlyRetries: string[];
}

/** Reads every entry of a stream (paged XRANGE) as `[entryId, fields]`. */
export async function readStream(redis: Redis, stream: string): Promise<Array<[string, string[]]>> {
  const out: Array<[string, string[]]> = [];
  let start = '-';
  for (;;) {
    const page = (await redis.xrange(stream, start, '+', 'COUNT', 1000)) as Array<
      [string, string[]]
    >;
    out.push(...page);
    if (page.length < 1000) return out;
    start = `(${page[page.length - 1][0]}`;
  }
}

function field(fields: readonly string[], name: string): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

/** `a` < `b` for stream entry ids. */
function idBefore(a: string, b: string): boolean {
  const [am, as] = a.split('-').map(BigInt);
  const [bm, bs] = b.split('-').map(BigInt);
  return am < bm || (am === bm && as < bs);
}

/** The dead letters of a dead-letter stream. */
export async function readDeadLetters(
  redis: Redis,
  deadLetterStream: string,
): Promise<DeadLetterRecord[]> {
  const entries = await readStream(redis, deadLetterStream);
  return entries.map(([, fields]) => ({
    id: field(fields, 'id'),
    sourceEntryId: field(fields, 'dlq_entry_id') ?? '',
    reason: field(fields, 'dlq_reason') ?? '',
  }));
}

/** Runs checks (1)-(4) on what Redis and the ledgers hold now. */
export async function runOracle(input: OracleInput): Promise<OracleReport> {
  const { redis, stream, group } = input;
  const dlqStream = input.deadLetterStream ?? `${stream}:dlq`;
  // In the order things happen to an entry, backwards: what was delivered (the group's last
  // delivered id), then the PEL, then what is written before an entry leaves it (its dead letter,
  // its ledger line). Every entry delivered by the first read is either pending in the second or
  // has its record in the later ones. Read the other way round, a handler finishing between the
  // reads looks acked without a second completion (a duplicate missed, as CI saw once)
  const groups = (await redis.xinfo('GROUPS', stream)) as unknown[][];
  const info = groups
    .map((flat) => {
      const map = new Map<string, unknown>();
      for (let i = 0; i + 1 < flat.length; i += 2) map.set(String(flat[i]), flat[i + 1]);
      return map;
    })
    .find((map) => map.get('name') === group);
  const lastDelivered = String(info?.get('last-delivered-id') ?? '0-0');

  const summary = (await redis.xpending(stream, group)) as [number, ...unknown[]];
  const pending = Number(summary[0]);
  const pendingRows = (
    pending > 0 ? await redis.xpending(stream, group, '-', '+', pending) : []
  ) as Array<[string, string, number, number]>;
  const pendingIds = new Set(pendingRows.map((row) => String(row[0])));

  const entries = await readStream(redis, stream);
  const deadLetters = await readDeadLetters(redis, dlqStream);
  const deadIds = new Set(deadLetters.map((d) => d.id).filter((id): id is string => !!id));
  const deadEntryIds = new Set(deadLetters.map((d) => d.sourceEntryId));

  const records = input.ledgers.flatMap(readLedger);
  const handledCount = new Map<string, number>();
  const handledEntryIds = new Set<string>();
  for (const r of records) {
    handledCount.set(r.id, (handledCount.get(r.id) ?? 0) + 1);
    handledEntryIds.add(r.entryId);
  }
  const lost = [...input.acked.keys()].filter((id) => !handledCount.has(id) && !deadIds.has(id));

  const ackedWithoutRecord: string[] = [];
  let undelivered = 0;
  for (const [entryId, fields] of entries) {
    if (idBefore(lastDelivered, entryId)) {
      undelivered++;
      continue;
    }
    if (pendingIds.has(entryId) || deadEntryIds.has(entryId) || handledEntryIds.has(entryId))
      continue;
    const id = field(fields, 'id');
    if (id !== undefined && (handledCount.has(id) || deadIds.has(id))) continue;
    ackedWithoutRecord.push(`${entryId} (id ${id ?? '-'})`);
  }

  let duplicates = 0;
  const duplicateIds: Array<[string, number]> = [];
  for (const [id, count] of handledCount) {
    if (count < 2) continue;
    duplicates += count - 1;
    if (duplicateIds.length < 20) duplicateIds.push([id, count]);
  }
  let handledAndDeadLettered = 0;
  for (const id of deadIds) if (handledCount.has(id)) handledAndDeadLettered++;

  const failures = input.ledgers.flatMap(readFailures);
  const earlyRetries: string[] = [];
  for (const failure of failures) {
    for (const later of [...records, ...failures]) {
      if (later.id !== failure.id || later.attempts <= failure.attempts) continue;
      if (later.startedAt < failure.dueAt)
        earlyRetries.push(
          `${failure.id} attempt ${later.attempts} by ${later.consumer} started ` +
            `${failure.dueAt - later.startedAt} ms before due`,
        );
    }
  }

  return {
    acknowledged: input.acked.size,
    handled: handledCount.size,
    handledRecords: records.length,
    deadLettered: deadLetters.length,
    lost,
    ackedWithoutRecord,
    pending,
    undelivered,
    duplicates,
    duplicateIds,
    handledAndDeadLettered,
    failedAttempts: failures.length,
    earlyRetries,
  };
}

/** One line for the test output. */
export function formatReport(report: OracleReport): string {
  return (
    `acknowledged ${report.acknowledged}, handled ${report.handled} ` +
    `(${report.handledRecords} completions), dead-lettered ${report.deadLettered}, ` +
    `lost ${report.lost.length}, acked-without-record ${report.ackedWithoutRecord.length}, ` +
    `pending ${report.pending}, undelivered ${report.undelivered}, duplicates ${report.duplicates}` +
    (report.duplicateIds.length > 0
      ? ` (${report.duplicateIds.map(([id, n]) => `${id}x${n}`).join(', ')})`
      : '') +
    (report.handledAndDeadLettered > 0
      ? `, handled-and-dead-lettered ${report.handledAndDeadLettered}`
      : '') +
    (report.failedAttempts > 0
      ? `, failed attempts ${report.failedAttempts}, early retries ${report.earlyRetries.length}`
      : '')
  );
}

/**
 * Asserts checks (1)-(3) and (5), and (4) when `duplicatesAllowed` is false. Throws one error naming
 * every failed check, with the report.
 */
export function assertOracle(report: OracleReport, { duplicatesAllowed = false } = {}): void {
  const failures: string[] = [];
  if (report.lost.length > 0)
    failures.push(
      `(1) ${report.lost.length} acknowledged writes lost: ${report.lost.slice(0, 10).join(', ')}`,
    );
  if (report.ackedWithoutRecord.length > 0)
    failures.push(
      `(2) ${report.ackedWithoutRecord.length} entries acked without a ledger record: ` +
        report.ackedWithoutRecord.slice(0, 10).join(', '),
    );
  if (report.pending !== 0) failures.push(`(3) XPENDING is ${report.pending}, not 0`);
  if (report.undelivered !== 0)
    failures.push(`(3) ${report.undelivered} entries never delivered to the group`);
  if (!duplicatesAllowed && report.duplicates !== 0)
    failures.push(`(4) ${report.duplicates} duplicates in a run that must have none`);
  if (report.earlyRetries.length > 0)
    failures.push(
      `(5) ${report.earlyRetries.length} retries started before due: ` +
        report.earlyRetries.slice(0, 10).join(', '),
    );
  if (failures.length > 0)
    throw new Error(
      `oracle failed:\n  ${failures.join('\n  ')}\n  report: ${formatReport(report)}`,
    );
}

/**
 * Waits until the system is quiet: every acknowledged write is handled or dead-lettered, the
 * group has nothing pending and nothing undelivered. Returns the report of that moment.
 */
export async function waitForQuiet(
  input: OracleInput,
  { timeoutMs = 20_000, message = 'quiet: all handled, nothing pending' } = {},
): Promise<OracleReport> {
  let last: OracleReport | undefined;
  try {
    return (await waitFor(
      async (): Promise<OracleReport | undefined> => {
        last = await runOracle(input);
        const quiet = last.lost.length === 0 && last.pending === 0 && last.undelivered === 0;
        return quiet ? last : undefined;
      },
      { timeoutMs, intervalMs: 100, message },
    )) as OracleReport;
  } catch (err) {
    throw new Error(`${(err as Error).message}\n  last report: ${last ? formatReport(last) : '-'}`);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
