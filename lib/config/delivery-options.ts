import { messages } from './messages';
import { EchoStreamConfigError } from '../errors/echo-stream-config.error';
import type { RateLimitOptions, RetryPolicy } from '../interfaces/delivery-control.interface';

/**
 * The default policy (docs/delivery.md "Retries"): exponential from 1 s, doubling, capped at 60 s,
 * no jitter.
 */
export const DEFAULT_RETRY_POLICY = {
  type: 'exponential',
  initialMs: 1000,
  factor: 2,
  maxMs: 60_000,
  jitter: 0,
} as const satisfies RetryPolicy;

const RETRY_TYPES = "{ type: 'fixed' | 'exponential' | 'custom', ... } or false";

/**
 * Checks the `retry` option (docs/delivery.md "Retries"); throws naming the option, where it was
 * given and the value.
 */
export function checkRetryOption(
  where: string,
  retry: unknown,
): asserts retry is RetryPolicy | false {
  if (retry === false) return;
  if (typeof retry !== 'object' || retry === null || Array.isArray(retry)) {
    throw new EchoStreamConfigError(messages.badOption(where, 'retry', RETRY_TYPES, retry));
  }
  const policy = retry as Record<string, unknown>;
  const allow = (...names: string[]): void => {
    for (const key of Object.keys(policy)) {
      if (key !== 'type' && !names.includes(key))
        throw new EchoStreamConfigError(
          messages.unknownOption(`${where} retry (${String(policy.type)})`, key, [
            'type',
            ...names,
          ]),
        );
    }
  };
  switch (policy.type) {
    case 'fixed':
      allow('delayMs');
      checkNumber(where, 'retry.delayMs', policy.delayMs, 0, true);
      return;
    case 'exponential':
      allow('initialMs', 'factor', 'maxMs', 'jitter');
      checkNumber(where, 'retry.initialMs', policy.initialMs, 0, true);
      if (policy.factor !== undefined) checkNumber(where, 'retry.factor', policy.factor, 1, false);
      if (policy.maxMs !== undefined) checkNumber(where, 'retry.maxMs', policy.maxMs, 0, true);
      if (policy.jitter !== undefined) {
        checkNumber(where, 'retry.jitter', policy.jitter, 0, false);
        if ((policy.jitter as number) > 1)
          throw new EchoStreamConfigError(
            messages.badOption(where, 'retry.jitter', 'a fraction from 0 to 1', policy.jitter),
          );
      }
      if (policy.maxMs !== undefined && (policy.maxMs as number) < (policy.initialMs as number)) {
        throw new EchoStreamConfigError(
          messages.badOption(
            where,
            'retry.maxMs',
            `>= retry.initialMs (${String(policy.initialMs)})`,
            policy.maxMs,
          ),
        );
      }
      return;
    case 'custom':
      allow('delayMs');
      if (typeof policy.delayMs !== 'function') {
        throw new EchoStreamConfigError(
          messages.badOption(
            where,
            'retry.delayMs',
            'a function (attempt, error, message) => ms',
            policy.delayMs,
          ),
        );
      }
      return;
    default:
      throw new EchoStreamConfigError(
        messages.badOption(where, 'retry.type', "'fixed', 'exponential' or 'custom'", policy.type),
      );
  }
}

/** Checks the `rateLimit` option (docs/delivery.md "Rate limits"); `null` means none. */
export function checkRateLimitOption(
  where: string,
  rateLimit: unknown,
): asserts rateLimit is RateLimitOptions | null {
  if (rateLimit === null) return;
  const expected = "{ max, perMs, scope?: 'process' | 'group' } or null";
  if (typeof rateLimit !== 'object' || Array.isArray(rateLimit)) {
    throw new EchoStreamConfigError(messages.badOption(where, 'rateLimit', expected, rateLimit));
  }
  const limit = rateLimit as Record<string, unknown>;
  for (const key of Object.keys(limit)) {
    if (!['max', 'perMs', 'scope'].includes(key))
      throw new EchoStreamConfigError(
        messages.unknownOption(`${where} rateLimit`, key, ['max', 'perMs', 'scope']),
      );
  }
  checkNumber(where, 'rateLimit.max', limit.max, 1, true);
  checkNumber(where, 'rateLimit.perMs', limit.perMs, 1, true);
  if (limit.scope !== undefined && limit.scope !== 'process' && limit.scope !== 'group') {
    throw new EchoStreamConfigError(
      messages.badOption(where, 'rateLimit.scope', "'process' or 'group'", limit.scope),
    );
  }
}

/** `dedup: true` remembers an acked branded id this long (ms). */
export const DEFAULT_DEDUP_WINDOW_MS = 600_000;

/** Checks the `dedup` option (docs/delivery.md "Duplicates and stale replays"). */
export function checkDedupOption(where: string, dedup: unknown): void {
  if (typeof dedup === 'boolean') return;
  const expected = 'true, false or { windowMs }';
  if (typeof dedup !== 'object' || dedup === null || Array.isArray(dedup)) {
    throw new EchoStreamConfigError(messages.badOption(where, 'dedup', expected, dedup));
  }
  for (const key of Object.keys(dedup)) {
    if (key !== 'windowMs')
      throw new EchoStreamConfigError(messages.unknownOption(`${where} dedup`, key, ['windowMs']));
  }
  checkNumber(where, 'dedup.windowMs', (dedup as { windowMs?: unknown }).windowMs, 1, true);
}

function checkNumber(
  where: string,
  option: string,
  value: unknown,
  min: number,
  integer: boolean,
): void {
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    value < min ||
    (integer && !Number.isInteger(value))
  ) {
    throw new EchoStreamConfigError(
      messages.badOption(where, option, `${integer ? 'an integer' : 'a number'} >= ${min}`, value),
    );
  }
}
