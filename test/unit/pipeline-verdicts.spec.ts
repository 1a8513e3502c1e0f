/**
 * The texts and wire-format rules behind docs/delivery.md "Nest pipeline" verdicts and tracing: what a rejected entry's
 * dead letter says, and that trace fields never reach (nor come from) a codec.
 */
import { BadRequestException, ForbiddenException, ValidationPipe } from '@nestjs/common';
import { IsInt, IsString, Min } from 'class-validator';
import { decodeEntry, encodeEntry, fieldsCodec, jsonCodec } from '../../lib/codec/codecs';
import { rejectionText } from '../../lib/handlers/rejection-text';

class Dto {
  @IsString()
  sku!: string;

  @IsInt()
  @Min(1)
  qty!: number;
}

describe('rejectionText', () => {
  it('lists each failed class-validator constraint after the exception message', async () => {
    const pipe = new ValidationPipe({ transform: true });
    const err = await pipe.transform({ sku: 7, qty: 0 }, { type: 'body', metatype: Dto }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(rejectionText(err)).toBe(
      'Bad Request Exception: sku must be a string; qty must not be less than 1',
    );
  });

  it('adds a string response message that differs from the exception message', () => {
    expect(rejectionText(new BadRequestException('qty is missing'))).toBe('qty is missing');
    expect(rejectionText(new ForbiddenException())).toBe('Forbidden');
    const custom = Object.assign(new Error('Refused'), {
      getResponse: () => ({ message: 'tenant t-9 is suspended' }),
    });
    expect(rejectionText(custom)).toBe('Refused: tenant t-9 is suspended');
  });

  it('falls back to the error text for anything else, and never throws', () => {
    expect(rejectionText(new Error('plain'))).toBe('plain');
    expect(rejectionText('a string')).toBe('a string');
    const broken = Object.assign(new Error('odd'), {
      getResponse: () => {
        throw new Error('boom');
      },
    });
    expect(rejectionText(broken)).toBe('odd');
  });
});

describe('trace fields in the wire format', () => {
  const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

  it('are never part of a decoded payload, whatever the codec', () => {
    const flat = ['id', 'e-1', 'sku', 'A-1', 'traceparent', traceparent, 'tracestate', 'k=v'];
    expect(decodeEntry(fieldsCodec, flat)).toEqual({ id: 'e-1', payload: { sku: 'A-1' } });
    const seen: Array<Record<string, string>> = [];
    const custom = { encode: () => ({}), decode: (f: Record<string, string>) => seen.push(f) };
    decodeEntry(custom, flat);
    expect(seen).toEqual([{ sku: 'A-1' }]);
    const json = ['id', 'e-2', 'data', '{"a":1}', 'traceparent', traceparent];
    expect(decodeEntry(jsonCodec, json)).toEqual({ id: 'e-2', payload: { a: 1 } });
  });

  it('are reserved: a codec cannot write them', () => {
    expect(() => encodeEntry(fieldsCodec, 'e-1', { traceparent })).toThrow(
      /must not return the reserved field 'traceparent'/,
    );
    expect(encodeEntry(fieldsCodec, 'e-1', { sku: 'A-1' })).toEqual(['id', 'e-1', 'sku', 'A-1']);
  });
});
