/**
 * The microservices transport's pure parts (lib/microservices/): the request/reply wire fields,
 * the verdict on what Nest's handler threw after its exception filters, and the loops a server's
 * handler map becomes.
 */
import { RpcException } from '@nestjs/microservices';
import type { MessageHandler } from '@nestjs/microservices';
import { fieldsCodec, jsonCodec, NonRetryableError } from '../../lib';
import { EchoStreamConfigError } from '../../lib/errors/echo-stream-config.error';
import { patternRoutes } from '../../lib/microservices/pattern-routes';
import { rpcVerdict } from '../../lib/microservices/rpc-verdict';
import {
  envelopeCodec,
  parseReply,
  replyFields,
  requestFields,
  RequestEnvelope,
  RPC_FIELDS,
} from '../../lib/microservices/rpc-wire';

const address = { stream: 'replies-1', correlationId: 'c-1', deadline: 1_000, ttlMs: 5_000 };

function recordOf(flat: readonly string[]): Record<string, string> {
  const record: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) record[flat[i]] = flat[i + 1];
  return record;
}

describe('wire fields', () => {
  it('decodes a request into its payload and reply address, the request fields kept from the codec', () => {
    const fields = recordOf(['a', '1', 'b', '2', ...requestFields(address)]);
    const request = envelopeCodec(fieldsCodec as never).decode(fields);
    expect(request).toBeInstanceOf(RequestEnvelope);
    expect(request).toEqual({ payload: { a: '1', b: '2' }, reply: address });
    const json = envelopeCodec(jsonCodec).decode({ data: '{"n":1}', ...fields });
    expect(json).toBeInstanceOf(RequestEnvelope);
    expect(json).toEqual({ payload: { n: 1 }, reply: address });
  });

  it("decodes an event (no request fields) to its payload alone, as the handler's codec does", () => {
    expect(envelopeCodec(jsonCodec).decode({ data: '[1]' })).toEqual([1]);
    expect(envelopeCodec(jsonCodec).decode({ data: '{"n":1}' })).not.toBeInstanceOf(
      RequestEnvelope,
    );
  });

  it('writes and reads back a value reply, an undefined one and an error reply', () => {
    expect(parseReply(replyFields('c', { kind: 'value', value: { p: 1 } }))).toEqual({
      correlationId: 'c',
      body: { kind: 'value', value: { p: 1 } },
    });
    expect(parseReply(replyFields('c', { kind: 'value', value: undefined }))).toEqual({
      correlationId: 'c',
      body: { kind: 'value', value: undefined },
    });
    const error = { status: 'error', message: 'no' };
    expect(parseReply(replyFields('c', { kind: 'error', error, reason: 'rpc' }))).toEqual({
      correlationId: 'c',
      body: { kind: 'error', error, reason: 'rpc' },
    });
    expect(parseReply(['other', 'x'])).toBeUndefined();
  });

  it('answers a value JSON cannot write with an unserializable error reply', () => {
    const reply = parseReply(replyFields('c', { kind: 'value', value: { n: 1n } }));
    expect(reply?.body).toMatchObject({ kind: 'error', reason: 'unserializable' });
    expect(recordOf(replyFields('c', { kind: 'value', value: 1 }))[RPC_FIELDS.data]).toBe('1');
  });
});

describe('rpcVerdict', () => {
  it("tells Nest's answer to an unknown error (retry) from an RpcException's (the caller's answer)", () => {
    expect(rpcVerdict({ status: 'error', message: 'Internal server error' }).kind).toBe('failed');
    expect(rpcVerdict({ status: 'error', message: 'no quote' })).toEqual({
      kind: 'rpc',
      error: { status: 'error', message: 'no quote' },
    });
    expect(rpcVerdict(new Error('boom')).kind).toBe('failed');
  });

  it('passes a NonRetryableError on, raw or inside an RpcException', () => {
    expect(rpcVerdict(new NonRetryableError('x')).kind).toBe('non-retryable');
    const inner = new NonRetryableError('y');
    // what Nest's default filter makes of `new RpcException(inner)`: getError() itself
    expect(rpcVerdict(new RpcException(inner).getError())).toEqual({
      kind: 'non-retryable',
      error: inner,
    });
  });

  it('reads a raw RpcException (a filter passed it on) as its getError()', () => {
    expect(rpcVerdict(new RpcException('nope'))).toEqual({
      kind: 'rpc',
      error: { status: 'error', message: 'nope' },
    });
  });
});

describe('patternRoutes', () => {
  function handler(isEventHandler: boolean, extras: Record<string, unknown> = {}): MessageHandler {
    const made = (async () => undefined) as MessageHandler;
    made.isEventHandler = isEventHandler;
    made.extras = extras;
    return made;
  }

  it("cuts Nest's event chain: one loop per pattern and group, each handler in its group's", () => {
    const first = handler(true);
    const second = handler(true, { group: 'audit' });
    const third = handler(true);
    first.next = second;
    second.next = third;
    const routes = patternRoutes(
      new Map([
        ['orders', first],
        ['quote', handler(false, { maxDeliveries: 2 })],
      ]),
      'billing',
      (p) => `s:${p}`,
    );
    expect(routes.map((r) => [r.stream, r.group, r.handlers.length, r.request])).toEqual([
      ['s:orders', 'billing', 2, false],
      ['s:orders', 'audit', 1, false],
      ['s:quote', 'billing', 1, true],
    ]);
    expect(routes[2].options).toEqual({ maxDeliveries: 2 });
    expect(first.next).toBeUndefined();
    expect(second.next).toBeUndefined();
  });

  it('refuses a pattern that is no string, and two option sets in one loop', () => {
    expect(() => patternRoutes(new Map([['{"cmd":"x"}', handler(true)]]), 'g', (p) => p)).toThrow(
      /is not a string/,
    );
    const first = handler(true, { maxDeliveries: 2 });
    first.next = handler(true, { maxDeliveries: 3 });
    expect(() => patternRoutes(new Map([['p', first]]), 'g', (p) => p)).toThrow(
      EchoStreamConfigError,
    );
  });
});
