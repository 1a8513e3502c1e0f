import { PREVIEW_CHARS } from '../dashboard.constants';

/** Most bytes of one API page (the JSON of a list route), whatever the entries hold. */
export const MAX_PAGE_BYTES = 1024 * 1024;

/** Longest value shown whole besides the preview (a dead letter's error text), in characters. */
export const MAX_VALUE_CHARS = 8192;

/** Longest name or short field shown whole (a reason, a group, a consumer), in characters. */
export const MAX_NAME_CHARS = 512;

/** Kept for the page's envelope (stream, group, counts, `next`) besides its entries. */
const ENVELOPE_BYTES = 8 * 1024;

/** A text cut to at most `max` characters (`…` marks the cut), and whether it was cut. */
export interface CutText {
  text: string;
  cut: boolean;
}

/** `text` cut at `max` characters, at a character boundary (never half a surrogate pair). */
export function cutText(text: string, max: number): CutText {
  if (text.length <= max) return { text, cut: false };
  let end = max;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return { text: `${text.slice(0, end)}…`, cut: true };
}

/**
 * `k=v k=v` of a flat field list, cut at {@link PREVIEW_CHARS} characters; built only as far
 * as the cut, so a field of megabytes costs no more than a short one. Plain text, never markup.
 */
export function previewFields(fields: readonly string[]): CutText {
  let text = '';
  for (let i = 0; i + 1 < fields.length && text.length <= PREVIEW_CHARS; i += 2) {
    const part = `${fields[i].slice(0, PREVIEW_CHARS + 1)}=${fields[i + 1].slice(0, PREVIEW_CHARS + 1)}`;
    text = text === '' ? part : `${text} ${part}`;
  }
  return cutText(text, PREVIEW_CHARS);
}

/**
 * Collects a page's entries until `count` of them or {@link MAX_PAGE_BYTES} of JSON, whichever
 * comes first: a page shortens itself rather than grow. `next` is the `?after=` of the page
 * that continues (`null` when the source ran out before either limit).
 */
export class PageBudget<T extends { entryId: string }> {
  readonly entries: T[] = [];
  private bytes = ENVELOPE_BYTES;
  private full = false;

  /**
   * @param cursorOf the `?after=` that continues after an entry (default: its entry id; a
   * partitioned stream's rows add their partition).
   */
  constructor(
    private readonly count: number,
    private readonly cursorOf: (entry: T) => string = (entry) => entry.entryId,
  ) {}

  /** Whether the page takes no more entries. */
  get done(): boolean {
    return this.full || this.entries.length >= this.count;
  }

  /** Adds `entry` when it fits; `false` (and the page is full) when it does not. */
  add(entry: T): boolean {
    if (this.done) return false;
    const size = Buffer.byteLength(JSON.stringify(entry)) + 1;
    if (this.bytes + size > MAX_PAGE_BYTES) {
      this.full = true;
      return false;
    }
    this.bytes += size;
    this.entries.push(entry);
    return true;
  }

  /** `?after=` of the next page: the last entry's cursor when the page is done, else `null`. */
  get next(): string | null {
    return this.done && this.entries.length > 0
      ? this.cursorOf(this.entries[this.entries.length - 1])
      : null;
  }
}
