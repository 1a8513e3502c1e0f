/**
 * errorText never throws (issue 10, defect 4): whatever a handler throws is turned into text for
 * the log line and the dead letter, also values whose `String()` throws.
 */
import { errorStack, errorText } from '../../lib/codec/codecs';

describe('errorText', () => {
  it('prints the message of an Error, a string as it is, an object as JSON', () => {
    expect(errorText(new Error('boom'))).toBe('boom');
    expect(errorText(new TypeError(''))).toBe('TypeError');
    expect(errorText('plain')).toBe('plain');
    expect(errorText({ code: 42 })).toBe('{"code":42}');
  });

  it('never throws: null prototype, cycles, throwing getters, hostile proxies, BigInt', () => {
    const cyclic = Object.create(null) as Record<string, unknown>;
    cyclic.self = cyclic;
    const bare = Object.create(null) as Record<string, unknown>;
    expect(() => String(cyclic)).toThrow();
    expect(() => String(bare)).toThrow();
    expect(errorText(cyclic)).toMatch(/null prototype.*Circular/);
    expect(errorText(bare)).toMatch(/null prototype/);

    const getter = new Error('unused');
    Object.defineProperty(getter, 'message', {
      get() {
        throw new Error('no message');
      },
    });
    expect(errorText(getter)).toBe('Error (its message cannot be read)');
    expect(errorStack(getter)).toBeUndefined();

    const trap = (): never => {
      throw new Error('trap');
    };
    const hostile = new Proxy({}, { get: trap, getPrototypeOf: trap, ownKeys: trap, has: trap });
    expect(typeof errorText(hostile)).toBe('string');
    expect(errorStack(hostile)).toBeUndefined();
    expect(errorText(10n)).toBe('10n');
    expect(errorText(undefined)).toBe('undefined');
    expect(errorText(Symbol('s'))).toBe('Symbol(s)');
  });
});
