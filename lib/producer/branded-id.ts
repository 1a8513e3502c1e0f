import { randomBytes } from 'node:crypto';

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
