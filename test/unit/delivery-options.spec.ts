/** Eager validation of `retry` and `rateLimit` (docs/delivery.md): the option, the handler and the value named. */
import { resolveHandlerOptions, resolveOptions } from '../../lib/config/module-options';
import { EchoStreamConfigError } from '../../lib/errors/echo-stream-config.error';
import { StreamHandler } from '../../lib/decorators/stream-handler.decorator';
import type { StreamHandlerOptions } from '../../lib/interfaces/stream-handler-options.interface';

const resolve = (own: Record<string, unknown>) =>
  resolveHandlerOptions(
    'orders',
    "@StreamHandler('orders', 'billing')",
    {},
    own as Partial<StreamHandlerOptions>,
  );

describe('retry option', () => {
  it('defaults to exponential from 1 s, doubling, capped at 60 s, no jitter', () => {
    expect(resolve({}).retry).toEqual({
      type: 'exponential',
      initialMs: 1000,
      factor: 2,
      maxMs: 60_000,
      jitter: 0,
    });
    expect(resolve({ retry: false }).retry).toBe(false);
    expect(resolveHandlerOptions('s', 'w', { retry: false }, {}).retry).toBe(false);
  });

  it.each([
    [
      { type: 'fixed', delayMs: -1 },
      /option 'retry.delayMs' must be an integer >= 0, got number -1/,
    ],
    [{ type: 'fixed', delayMs: Number.NaN }, /'retry.delayMs' .* got number NaN/],
    [{ type: 'fixed' }, /'retry.delayMs' .* got undefined/],
    [{ type: 'exponential', initialMs: 100, factor: 0.5 }, /'retry.factor' must be a number >= 1/],
    [
      { type: 'exponential', initialMs: 100, jitter: 2 },
      /'retry.jitter' must be a fraction from 0 to 1, got number 2/,
    ],
    [
      { type: 'exponential', initialMs: 1000, maxMs: 10 },
      /'retry.maxMs' must be >= retry.initialMs/,
    ],
    [{ type: 'custom', delayMs: 5 }, /'retry.delayMs' must be a function/],
    [
      { type: 'linear', delayMs: 5 },
      /'retry.type' must be 'fixed', 'exponential' or 'custom', got 'linear'/,
    ],
    [{ type: 'fixed', delayMs: 5, maxMs: 9 }, /unknown option 'maxMs'/],
    [true, /option 'retry' must be .* or false, got boolean true/],
    [null, /option 'retry' must be .*, got null/],
  ])('rejects %p with a clear error naming the handler', (retry, message) => {
    expect(() => resolve({ retry })).toThrow(EchoStreamConfigError);
    expect(() => resolve({ retry })).toThrow(message);
    expect(() => resolve({ retry })).toThrow(/@StreamHandler\('orders', 'billing'\)/);
  });

  it('is checked when the decorator is applied and in module defaults', () => {
    expect(() => StreamHandler('s', 'g', { retry: { type: 'fixed', delayMs: -5 } })).toThrow(
      /@StreamHandler\('s', 'g'\): option 'retry.delayMs'/,
    );
    expect(() =>
      resolveOptions({ defaults: { retry: { type: 'exponential', initialMs: -1 } } }),
    ).toThrow(/EchoStreamModule defaults: option 'retry.initialMs'/);
  });
});

describe('rateLimit option', () => {
  it('defaults to none and accepts both scopes', () => {
    expect(resolve({}).rateLimit).toBeNull();
    expect(resolve({ rateLimit: { max: 5, perMs: 1000 } }).rateLimit).toEqual({
      max: 5,
      perMs: 1000,
    });
    expect(resolve({ rateLimit: { max: 5, perMs: 1000, scope: 'group' } }).rateLimit).toMatchObject(
      {
        scope: 'group',
      },
    );
  });

  it.each([
    [{ max: 0, perMs: 1000 }, /option 'rateLimit.max' must be an integer >= 1, got number 0/],
    [{ max: 1.5, perMs: 1000 }, /'rateLimit.max' .* got number 1.5/],
    [{ max: 5, perMs: 0 }, /'rateLimit.perMs' must be an integer >= 1, got number 0/],
    [
      { max: 5, perMs: 100, scope: 'cluster' },
      /'rateLimit.scope' must be 'process' or 'group', got 'cluster'/,
    ],
    [{ max: 5, perMs: 100, per: 1 }, /unknown option 'per'/],
    [5, /option 'rateLimit' must be .*, got number 5/],
  ])('rejects %p with a clear error naming the handler', (rateLimit, message) => {
    expect(() => resolve({ rateLimit })).toThrow(message);
    expect(() => resolve({ rateLimit })).toThrow(/@StreamHandler\('orders', 'billing'\)/);
  });
});
