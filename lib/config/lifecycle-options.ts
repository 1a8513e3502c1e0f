import { messages } from './messages';
import { EchoStreamConfigError } from '../errors/echo-stream-config.error';
import type { RetentionRule } from '../interfaces/lifecycle.interface';

/** The documented defaults of retention and consumer cleanup (docs/operations.md). */
export const LIFECYCLE_DEFAULTS = {
  retentionIntervalMs: 60_000,
  consumerCleanupIdleMs: 86_400_000,
} as const;

/**
 * The smallest `consumerCleanup.idleMs`: live consumers mark themselves seen every `idleMs / 3`,
 * which must stay well above a command's round trip.
 */
const MIN_CLEANUP_IDLE_MS = 1000;

/** A retention rule with its optional parts made explicit (internal). */
export interface ResolvedRetentionRule {
  stream: string;
  /** `null`: no age limit. */
  maxAgeMs: number | null;
  /** `null`: no length limit. */
  maxLen: number | null;
  ignoreGroups: readonly string[];
}

const RULE_OPTION_NAMES: ReadonlyArray<keyof RetentionRule> = [
  'stream',
  'maxAgeMs',
  'maxLen',
  'ignoreGroups',
];

/**
 * Validates the module options `retention` and `retentionIntervalMs` (a bad one fails at
 * registration, before anything is trimmed) and applies their defaults.
 */
export function resolveRetention(
  where: string,
  retention: unknown,
  retentionIntervalMs: unknown,
): { rules: ResolvedRetentionRule[]; intervalMs: number } {
  const intervalMs = retentionIntervalMs ?? LIFECYCLE_DEFAULTS.retentionIntervalMs;
  checkPositiveInteger(where, 'retentionIntervalMs', intervalMs);
  if (retention === undefined) return { rules: [], intervalMs: intervalMs as number };
  if (!Array.isArray(retention)) {
    throw new EchoStreamConfigError(
      messages.badOption(
        where,
        'retention',
        'an array of { stream, maxAgeMs?, maxLen? }',
        retention,
      ),
    );
  }
  const rules = retention.map((rule: unknown, i) => resolveRule(`${where} retention[${i}]`, rule));
  const seen = new Set<string>();
  for (const rule of rules) {
    if (seen.has(rule.stream)) {
      throw new EchoStreamConfigError(
        `${where}: two retention rules for stream '${rule.stream}'; merge them into one`,
      );
    }
    seen.add(rule.stream);
  }
  return { rules, intervalMs: intervalMs as number };
}

/** Validates the handler option `consumerCleanup` (`false` or `{ idleMs }`). */
export function checkConsumerCleanup(where: string, value: unknown): void {
  if (value === false) return;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new EchoStreamConfigError(
      messages.badOption(where, 'consumerCleanup', '{ idleMs } or false', value),
    );
  }
  for (const key of Object.keys(value)) {
    if (key !== 'idleMs') {
      throw new EchoStreamConfigError(
        messages.unknownOption(`${where} consumerCleanup`, key, ['idleMs']),
      );
    }
  }
  const { idleMs } = value as { idleMs?: unknown };
  if (typeof idleMs !== 'number' || !Number.isSafeInteger(idleMs) || idleMs < MIN_CLEANUP_IDLE_MS) {
    throw new EchoStreamConfigError(
      messages.badOption(
        where,
        'consumerCleanup.idleMs',
        `an integer >= ${MIN_CLEANUP_IDLE_MS}`,
        idleMs,
      ),
    );
  }
}

function resolveRule(where: string, rule: unknown): ResolvedRetentionRule {
  if (typeof rule !== 'object' || rule === null || Array.isArray(rule)) {
    throw new EchoStreamConfigError(`${where}: must be an object { stream, maxAgeMs?, maxLen? }`);
  }
  for (const key of Object.keys(rule)) {
    if (!(RULE_OPTION_NAMES as readonly string[]).includes(key)) {
      throw new EchoStreamConfigError(messages.unknownOption(where, key, RULE_OPTION_NAMES));
    }
  }
  const { stream, maxAgeMs, maxLen, ignoreGroups = [] } = rule as Partial<RetentionRule>;
  if (typeof stream !== 'string' || stream.length === 0) {
    throw new EchoStreamConfigError(
      messages.badOption(where, 'stream', 'a non-empty string', stream),
    );
  }
  const at = `${where} (stream '${stream}')`;
  if (maxAgeMs !== undefined) checkPositiveInteger(at, 'maxAgeMs', maxAgeMs);
  if (maxLen !== undefined) checkPositiveInteger(at, 'maxLen', maxLen);
  if (maxAgeMs === undefined && maxLen === undefined) {
    throw new EchoStreamConfigError(`${at}: give maxAgeMs, maxLen or both (what to trim)`);
  }
  if (
    !Array.isArray(ignoreGroups) ||
    ignoreGroups.some((g) => typeof g !== 'string' || g.length === 0)
  ) {
    throw new EchoStreamConfigError(
      messages.badOption(at, 'ignoreGroups', 'an array of group names', ignoreGroups),
    );
  }
  return {
    stream,
    maxAgeMs: maxAgeMs ?? null,
    maxLen: maxLen ?? null,
    ignoreGroups: [...ignoreGroups],
  };
}

function checkPositiveInteger(where: string, option: string, value: unknown): void {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new EchoStreamConfigError(messages.badOption(where, option, 'an integer >= 1', value));
  }
}
