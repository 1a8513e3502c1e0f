/**
 * The options of idempotent publish (module: `producer`, `idempotencyWindowMs`) and of skipped
 * duplicates and stale replays (handler: `dedup`, `newerWins`): defaults and refusals.
 */
import { EchoStreamConfigError } from '../../lib/errors/echo-stream-config.error';
import { resolveHandlerOptions, resolveOptions } from '../../lib/config/module-options';

describe('module options of idempotent publish', () => {
  it('off by default, window 600000', () => {
    expect(resolveOptions({})).toMatchObject({
      idempotentPublish: false,
      idempotencyWindowMs: 600_000,
    });
    expect(
      resolveOptions({ producer: { idempotent: true }, idempotencyWindowMs: 5000 }),
    ).toMatchObject({ idempotentPublish: true, idempotencyWindowMs: 5000 });
  });

  it.each([
    [{ producer: { idempotent: 'yes' } }, /producer\.idempotent/],
    [{ producer: { idempotnet: true } }, /idempotnet/],
    [{ producer: 'on' }, /producer/],
    [{ idempotencyWindowMs: 0 }, /idempotencyWindowMs/],
    [{ idempotencyWindowMs: 1.5 }, /idempotencyWindowMs/],
  ])('refuses %j', (options, pattern) => {
    expect(() => resolveOptions(options as never)).toThrow(EchoStreamConfigError);
    expect(() => resolveOptions(options as never)).toThrow(pattern);
  });
});

describe('handler options dedup and newerWins', () => {
  it('off by default', () => {
    expect(resolveHandlerOptions('s', 'H.m', {}, {})).toMatchObject({
      dedup: false,
      newerWins: null,
    });
  });

  it('accepts true, { windowMs } and a key function', () => {
    const key = () => 'k';
    expect(
      resolveHandlerOptions('s', 'H.m', {}, { dedup: { windowMs: 10 }, newerWins: key }),
    ).toMatchObject({ dedup: { windowMs: 10 }, newerWins: key });
  });

  it.each([
    [{ dedup: 'yes' }, /dedup/],
    [{ dedup: { windowMs: 0 } }, /dedup\.windowMs/],
    [{ dedup: { window: 10 } }, /window/],
    [{ newerWins: 'accountId' }, /newerWins/],
  ])('refuses %j', (options, pattern) => {
    expect(() => resolveHandlerOptions('s', 'H.m', {}, options as never)).toThrow(pattern);
  });
});

describe('handler option exactlyOnce', () => {
  it('off by default; on, it turns dedup on unless dedup is set', () => {
    expect(resolveHandlerOptions('s', 'H.m', {}, {})).toMatchObject({ exactlyOnce: false });
    expect(resolveHandlerOptions('s', 'H.m', {}, { exactlyOnce: true })).toMatchObject({
      exactlyOnce: true,
      dedup: true,
    });
    expect(
      resolveHandlerOptions('s', 'H.m', {}, { exactlyOnce: true, dedup: { windowMs: 10 } }),
    ).toMatchObject({ dedup: { windowMs: 10 } });
    expect(
      resolveHandlerOptions('s', 'H.m', { dedup: false }, { exactlyOnce: true }),
    ).toMatchObject({ dedup: false });
  });

  it.each([
    [{}, { exactlyOnce: 'yes' }, /exactlyOnce.*a boolean/],
    [{}, { exactlyOnce: true, batch: true }, /exactlyOnce.*false with batch: true/],
    [{ batch: true }, { exactlyOnce: true }, /exactlyOnce.*false with batch: true/],
  ])('refuses defaults %j with %j', (defaults, own, pattern) => {
    const resolve = () => resolveHandlerOptions('s', 'H.m', defaults as never, own as never);
    expect(resolve).toThrow(EchoStreamConfigError);
    expect(resolve).toThrow(pattern);
  });
});
