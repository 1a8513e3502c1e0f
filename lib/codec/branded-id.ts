import { createHash, randomBytes } from 'node:crypto';

/** Characters of the mint time: base36 milliseconds since the epoch, zero-padded. */
const TIME_WIDTH = 10;
/** Characters of the sequence: base36, zero-padded. */
const SEQUENCE_WIDTH = 6;
/** Characters of the node part: fixed per generator. */
const NODE_WIDTH = 8;
/** Total length of a branded id. */
const ID_LENGTH = TIME_WIDTH + SEQUENCE_WIDTH + NODE_WIDTH;

/** The largest mint time 10 base36 characters hold (year ~117,000). */
const MAX_TIME = 36 ** TIME_WIDTH - 1;
/** Ids per millisecond before the generator borrows the next millisecond. */
const SEQUENCE_LIMIT = 36 ** SEQUENCE_WIDTH;

const ID_PATTERN = new RegExp(`^[0-9a-z]{${ID_LENGTH}}$`);
const NODE_PATTERN = new RegExp(`^[0-9a-z]{${NODE_WIDTH}}$`);

/** Options of {@link BrandedIdGenerator} and {@link createBrandedIdGenerator} (mostly for tests). */
export interface BrandedIdGeneratorOptions {
  /**
   * The clock, in milliseconds since the epoch.
   * @default Date.now
   */
  now?: () => number;
  /**
   * Supplies the node part, called once per generator: exactly 8 characters of `[0-9a-z]`.
   * @default 40 bits from `crypto.randomBytes`, as 8 base32 characters
   */
  random?: () => string;
}

/**
 * Mints branded ids: 24 characters of `[0-9a-z]`, fixed width, so that plain string order
 * (`<`, `Array.prototype.sort()`) is mint order.
 *
 * ```
 * kxq3b1c2d4 000000 a1b2c3d4     (shown with spaces; an id has none)
 * |          |      └ node: 8 chars, random, fixed per generator (uniqueness across processes)
 * |          └ sequence: 6 chars base36, per millisecond (2,176,782,336 ids per ms)
 * └ time: 10 chars base36, zero-padded milliseconds since the epoch (the mint time)
 * ```
 *
 * Ids of one generator are strictly increasing in mint order, also within one millisecond and
 * when the clock steps backwards: the generator never mints a time below the last one it used;
 * it keeps that time and counts the sequence up (and borrows the next millisecond when a
 * sequence runs out). The time part is therefore the mint time, or slightly later after a clock
 * step back. Ids of different generators never collide (the node part differs; 40 random bits).
 */
export class BrandedIdGenerator {
  private readonly now: () => number;
  private readonly node: string;
  private lastMs = -1;
  private sequence = 0;

  constructor(options: BrandedIdGeneratorOptions = {}) {
    this.now = options.now ?? Date.now;
    const node = options.random ? options.random() : randomNode();
    if (typeof node !== 'string' || !NODE_PATTERN.test(node)) {
      throw new TypeError(
        `branded id node part must be ${NODE_WIDTH} characters of [0-9a-z], got ${JSON.stringify(node)}`,
      );
    }
    this.node = node;
  }

  /** The next id: greater (as a string) than every id this generator minted before. */
  next(): string {
    const clock = this.now();
    if (typeof clock !== 'number' || !Number.isFinite(clock) || clock < 0) {
      throw new RangeError(
        `branded id clock returned ${String(clock)}; expected milliseconds >= 0`,
      );
    }
    const ms = Math.floor(clock);
    if (ms > this.lastMs) {
      this.lastMs = ms;
      this.sequence = 0;
    } else if (++this.sequence >= SEQUENCE_LIMIT) {
      this.lastMs++;
      this.sequence = 0;
    }
    if (this.lastMs > MAX_TIME) {
      throw new RangeError(
        `branded id time ${this.lastMs} does not fit ${TIME_WIDTH} base36 characters`,
      );
    }
    return (
      this.lastMs.toString(36).padStart(TIME_WIDTH, '0') +
      this.sequence.toString(36).padStart(SEQUENCE_WIDTH, '0') +
      this.node
    );
  }
}

/** A generator as a function: each call returns {@link BrandedIdGenerator.next}. */
export function createBrandedIdGenerator(options?: BrandedIdGeneratorOptions): () => string {
  const generator = new BrandedIdGenerator(options);
  return () => generator.next();
}

/**
 * The process-wide generator behind {@link brandedId} and `StreamProducer`, so that every id
 * minted in this process (by any producer) is strictly increasing in mint order. Its state (last
 * time and sequence) is the only mutable module state of the package.
 */
const processGenerator = new BrandedIdGenerator();

/** Mints a branded id from the process-wide generator (the one `StreamProducer` uses). */
export function brandedId(): string {
  return processGenerator.next();
}

/** True when `value` has the shape of a branded id (24 characters of `[0-9a-z]`). */
export function isBrandedId(value: unknown): value is string {
  return typeof value === 'string' && ID_PATTERN.test(value);
}

/**
 * The mint time carried by a branded id.
 * @throws TypeError when `id` is not a branded id.
 */
export function brandedIdTime(id: string): Date {
  if (!isBrandedId(id)) {
    throw new TypeError(
      `not a branded id: ${describe(id)} (expected ${ID_LENGTH} characters of [0-9a-z])`,
    );
  }
  return new Date(parseInt(id.slice(0, TIME_WIDTH), 36));
}

/** Characters of a derived id's position: base36, zero-padded. */
const POSITION_WIDTH = 3;
/** Outputs one entry can derive ids for: positions 0 to 46655. */
const POSITION_LIMIT = 36 ** POSITION_WIDTH;
/** Where a branded id's node part starts. */
const NODE_START = TIME_WIDTH + SEQUENCE_WIDTH;
/** Characters of the source's node part a derived id keeps at the head of its own. */
const KEPT_NODE_HEAD = 2;
/** Characters of the source's tail (its position, when it is a derived id) kept after them. */
const KEPT_TAIL = NODE_WIDTH - KEPT_NODE_HEAD - POSITION_WIDTH;
const ENTRY_ID_PATTERN = /^(\d+)(?:-(\d+))?$/;

/**
 * The branded id of the `position`-th output (0-based) of the entry whose branded id is `source`,
 * e.g. the entries an exactly-once handler publishes through `m.tx.publish`.
 *
 * Why: downstream `dedup` and `newerWins` compare branded ids, and an idempotent publish is keyed
 * by one. An output's id must therefore be the same on every replay of its entry (so a replay's
 * output is seen once), distinct from the entry's other outputs, and ordered like the entries
 * (so a later entry's outputs are never taken for stale ones).
 *
 * - Deterministic: the same `source` and `position` give the same id, in any process.
 * - A branded id: 24 characters of `[0-9a-z]` ({@link isBrandedId}), whose time
 *   ({@link brandedIdTime}) is the source's.
 * - Ordered: outputs of one source sort by position; outputs of a source sort after those of
 *   every source that sorts before it when the two differ in time or sequence (always so for ids
 *   of one generator, and for the entries of one stream), or in the first 2 characters of their
 *   node parts; sources equal in those (ids minted by two processes in the same millisecond with
 *   the same sequence) are told apart by their last 3 characters, in their order.
 *
 * Layout: the source's time and sequence (16 characters), the first 2 characters of its node
 * part, its last 3 characters, then `position` (3 characters, base36). An id derived from a
 * derived id keeps the latter's position in those 3 characters, so the outputs of one entry's
 * outputs (the stage of a pipeline after one that published several outputs per entry) stay
 * distinct and in order. 24 characters cannot hold a whole lineage: an id derived three times
 * keeps the last two positions only, so two outputs whose lineages differ in the first position
 * alone get the same id (a pipeline of three stages after the one that published several).
 *
 * A `source` that is not a branded id is taken as a stream entry id (`1700000000000-5`, the
 * message id of an entry without a branded id): time = its milliseconds, sequence = its sequence
 * (the entries of one stream keep their order), then 5 characters of a SHA-1 of `source`, then
 * `position`. Entries with equal ids in two streams derive equal ids.
 *
 * @param source the entry's branded id, or its stream entry id when it has none.
 * @param position the output's place among the entry's outputs: an integer, 0 to 46655.
 * @throws TypeError when `source` is not a non-empty string, or is neither a branded id nor a
 *   stream entry id; RangeError when `position` is out of range, or an entry id's milliseconds
 *   or sequence do not fit a branded id (10 and 6 base36 characters).
 */
export function derivedBrandedId(source: string, position: number): string {
  if (typeof source !== 'string' || source.length === 0) {
    throw new TypeError(
      `derivedBrandedId(): source must be a non-empty string, got ${describe(source)}`,
    );
  }
  if (typeof position !== 'number' || !Number.isInteger(position)) {
    throw new TypeError(
      `derivedBrandedId(): position must be an integer, got ${typeof position === 'number' ? position : describe(position)}`,
    );
  }
  if (position < 0 || position >= POSITION_LIMIT) {
    throw new RangeError(
      `derivedBrandedId(): position must be 0 to ${POSITION_LIMIT - 1}, got ${position}`,
    );
  }
  const head = isBrandedId(source)
    ? source.slice(0, NODE_START + KEPT_NODE_HEAD) + source.slice(ID_LENGTH - KEPT_TAIL)
    : entryIdHead(source);
  return head + position.toString(36).padStart(POSITION_WIDTH, '0');
}

/** The first 21 characters of an id derived from stream entry id `entryId`: time, sequence, hash. */
function entryIdHead(entryId: string): string {
  const match = ENTRY_ID_PATTERN.exec(entryId);
  if (!match) {
    throw new TypeError(
      `derivedBrandedId(): source ${describe(entryId)} is neither a branded id nor a stream entry id (<ms>-<seq>)`,
    );
  }
  const ms = BigInt(match[1]);
  const sequence = BigInt(match[2] ?? '0');
  if (ms > BigInt(MAX_TIME) || sequence >= BigInt(SEQUENCE_LIMIT)) {
    throw new RangeError(
      `derivedBrandedId(): entry id ${describe(entryId)} does not fit a branded id (milliseconds up to ${MAX_TIME}, sequence below ${SEQUENCE_LIMIT})`,
    );
  }
  const digest = createHash('sha1').update(entryId).digest().readUInt32BE(0);
  const hashWidth = NODE_WIDTH - POSITION_WIDTH;
  return (
    ms.toString(36).padStart(TIME_WIDTH, '0') +
    sequence.toString(36).padStart(SEQUENCE_WIDTH, '0') +
    (digest % 36 ** hashWidth).toString(36).padStart(hashWidth, '0')
  );
}

/** 40 random bits as 8 base32 characters (`[0-9a-v]`, a subset of the id alphabet). */
function randomNode(): string {
  const bytes = randomBytes(5);
  let value = 0;
  for (const byte of bytes) value = value * 256 + byte;
  return value.toString(32).padStart(NODE_WIDTH, '0');
}

function describe(value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  return value === null ? 'null' : typeof value;
}
