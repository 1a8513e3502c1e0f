/**
 * boundedText (issue 22, "unbounded answers"): error text kept for a dead letter or a log line is
 * at most 8 KiB of UTF-8, marker included, cut between two characters, the marker naming the
 * bytes left out; errorText, errorStack and rejectionText go through it.
 */
import { BadRequestException, ForbiddenException } from '@nestjs/common';
import { boundedText, ERROR_TEXT_MAX_BYTES } from '../../lib/codec/bounded-text';
import { errorStack, errorText } from '../../lib/codec/codecs';
import { rejectionText } from '../../lib/handlers/rejection-text';

const CAP = 8192;
const MARKER = /\.\.\. \[cut: (\d+) more bytes\]$/;
const bytes = (text: string): number => Buffer.byteLength(text, 'utf8');

/** The head kept and the count the marker names; fails when `text` carries no marker. */
function parts(text: string): { head: string; leftOut: number } {
  const marked = MARKER.exec(text);
  if (!marked) throw new Error(`no cut marker at the end of ${text.slice(-60)}`);
  return { head: text.slice(0, marked.index), leftOut: Number(marked[1]) };
}

/** What every cut must hold: within the cap, a head of the original, the bytes accounted for. */
function expectCut(cut: string, whole: string, maxBytes = CAP): void {
  expect(bytes(cut)).toBeLessThanOrEqual(maxBytes);
  const { head, leftOut } = parts(cut);
  expect(whole.startsWith(head)).toBe(true);
  expect(bytes(head) + leftOut).toBe(bytes(whole));
  // no character split: the head survives a UTF-8 round trip (a lone surrogate would not)
  expect(Buffer.from(head, 'utf8').toString('utf8')).toBe(head);
  expect(head).not.toContain('\uFFFD');
  // as much kept as fits: the next character would not have fitted beside the widest marker
  const room = maxBytes - bytes(`... [cut: ${bytes(whole)} more bytes]`);
  const next = String.fromCodePoint(whole.codePointAt(head.length)!);
  expect(bytes(head) + bytes(next)).toBeGreaterThan(room);
}

describe('boundedText', () => {
  it('caps at 8 KiB by default', () => {
    expect(ERROR_TEXT_MAX_BYTES).toBe(CAP);
  });

  it('keeps a text of exactly 8192 bytes whole, ASCII or not', () => {
    const ascii = 'a'.repeat(CAP);
    expect(boundedText(ascii)).toBe(ascii);
    const emoji = '\u{1F600}'.repeat(CAP / 4);
    expect(bytes(emoji)).toBe(CAP);
    expect(boundedText(emoji)).toBe(emoji);
    const short = 'short text';
    expect(boundedText(short)).toBe(short);
  });

  it('cuts a text of 8193 bytes and says how many bytes it left out', () => {
    const whole = 'a'.repeat(CAP + 1);
    const cut = boundedText(whole);
    expect(cut).not.toBe(whole);
    expectCut(cut, whole);
  });

  it('names the bytes left out of a megabyte', () => {
    const whole = 'x'.repeat(1024 * 1024);
    const cut = boundedText(whole);
    expectCut(cut, whole);
    expect(parts(cut).leftOut).toBe(1024 * 1024 - parts(cut).head.length);
  });

  it('never splits a 4-byte character straddling the boundary, at any offset', () => {
    for (let pad = 0; pad < 8; pad++) {
      const whole = 'a'.repeat(pad) + '\u{1F600}'.repeat(CAP);
      const cut = boundedText(whole);
      expectCut(cut, whole);
      const { head } = parts(cut);
      expect(bytes(head.slice(pad)) % 4).toBe(0);
      expect(head.length - pad).toBe(2 * ((bytes(head) - pad) / 4)); // whole surrogate pairs
    }
  });

  it('never splits a 2- or 3-byte character', () => {
    for (const char of ['\u00e9', '\u20ac', '\u4e2d']) {
      for (let pad = 0; pad < 4; pad++) {
        const whole = 'a'.repeat(pad) + char.repeat(CAP);
        expectCut(boundedText(whole), whole);
      }
    }
  });

  it('counts a lone surrogate as the 3 bytes it is sent as, and keeps it whole', () => {
    const whole = '\ud800'.repeat(CAP);
    const cut = boundedText(whole);
    expect(bytes(cut)).toBeLessThanOrEqual(CAP);
    const { head, leftOut } = parts(cut);
    expect(whole.startsWith(head)).toBe(true);
    expect(bytes(head) + leftOut).toBe(3 * CAP);
  });

  it('changes nothing when applied to its own result', () => {
    for (const whole of ['a'.repeat(CAP * 3), '\u{1F600}'.repeat(CAP), 'a'.repeat(CAP + 1)]) {
      const once = boundedText(whole);
      expect(boundedText(once)).toBe(once);
    }
  });

  it('takes another bound; Infinity keeps everything', () => {
    const whole = 'b'.repeat(1000);
    expectCut(boundedText(whole, 200), whole, 200);
    expect(boundedText(whole, Infinity)).toBe(whole);
  });
});

describe('error texts are bounded', () => {
  it('errorText: a thrown megabyte (message, string or object) becomes a cut of 8 KiB', () => {
    const huge = '\u{1F600}'.repeat(256 * 1024);
    expectCut(errorText(new Error(huge)), huge);
    expectCut(errorText(huge), huge);
    const json = JSON.stringify({ blob: huge });
    expectCut(errorText({ blob: huge }), json);
    expect(errorText(new Error('boom'))).toBe('boom');
  });

  it('errorStack: the message part is cut, the frames are kept', () => {
    const huge = 'y'.repeat(1024 * 1024);
    const err = new Error(huge);
    const stack = errorStack(err)!;
    expect(bytes(stack)).toBeLessThanOrEqual(CAP);
    const frames = err.stack!.slice(err.stack!.indexOf('\n    at '));
    expect(stack.endsWith(frames)).toBe(true);
    const head = stack.slice(0, stack.length - frames.length);
    expect(head).toMatch(/^Error: y+\.\.\. \[cut: \d+ more bytes\]$/);
    expect(bytes(head) - bytes(`... [cut: ${parts(head).leftOut} more bytes]`)).toBe(
      bytes(`Error: ${huge}`) - parts(head).leftOut,
    );
    const small = new Error('small');
    expect(errorStack(small)).toBe(small.stack);
  });

  it('errorStack: a stack without frames is cut like any text', () => {
    const err = new Error('unused');
    err.stack = 'z'.repeat(CAP * 2);
    expectCut(errorStack(err)!, err.stack);
  });

  it("rejectionText: a guard's megabyte, or thousands of failed constraints, end in one cut", () => {
    const huge = 'q'.repeat(1024 * 1024);
    expectCut(rejectionText(new ForbiddenException(huge)), huge);
    const many = Array.from({ length: 5000 }, (_, i) => `field${i} must be a string`);
    const refusal = new BadRequestException(many);
    const whole = `Bad Request Exception: ${many.join('; ')}`;
    const cut = rejectionText(refusal);
    expectCut(cut, whole);
    expect(cut.match(/\[cut:/g)).toHaveLength(1);
  });
});
