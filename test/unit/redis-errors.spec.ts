/**
 * The error predicates of the Redis layer (lib/redis/redis-errors.ts): what a reply or a failed
 * command says, told from the error alone. Reply errors are built as ioredis builds them (an
 * Error named `ReplyError` carrying the server's line). The file must stay loadable without
 * ioredis: the engine imports it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  isBusyGroupError,
  isNoGroupError,
  isNoScriptError,
  isNoSuchKeyError,
  isOomError,
  isReplyError,
  isWrongTypeError,
  RedisDeadlineError,
} from '../../lib/redis/redis-errors';

/** A server error reply as ioredis hands it over. */
function reply(message: string): Error {
  const err = new Error(message);
  err.name = 'ReplyError';
  return err;
}

const NOT_ERRORS: unknown[] = [undefined, null, 'NOGROUP No such key', { message: 'NOGROUP' }, 42];

describe('Redis error predicates', () => {
  it('isReplyError: a server reply, not a connection failure nor a deadline', () => {
    expect(isReplyError(reply('ERR unknown command'))).toBe(true);
    expect(
      isReplyError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
    ).toBe(false);
    expect(isReplyError(new RedisDeadlineError('XACK', 10))).toBe(false);
    for (const value of NOT_ERRORS) expect(isReplyError(value)).toBe(false);
  });

  it('isNoGroupError: NOGROUP, and the UNBLOCKED of a read parked on a deleted stream', () => {
    expect(
      isNoGroupError(reply("NOGROUP No such key 'orders' or consumer group 'g' in XREADGROUP")),
    ).toBe(true);
    expect(isNoGroupError(reply('UNBLOCKED the stream key no longer exists'))).toBe(true);
    // the other UNBLOCKED (CLIENT UNBLOCK ... ERROR) is not a lost group
    expect(isNoGroupError(reply('UNBLOCKED client unblocked via CLIENT UNBLOCK'))).toBe(false);
    expect(isNoGroupError(reply('ERR no such key'))).toBe(false);
    for (const value of NOT_ERRORS) expect(isNoGroupError(value)).toBe(false);
  });

  it('isBusyGroupError, isOomError, isWrongTypeError, isNoScriptError: the reply prefix', () => {
    const cases: Array<[(err: unknown) => boolean, string]> = [
      [isBusyGroupError, 'BUSYGROUP Consumer Group name already exists'],
      [isOomError, "OOM command not allowed when used memory > 'maxmemory'."],
      [isWrongTypeError, 'WRONGTYPE Operation against a key holding the wrong kind of value'],
      [isNoScriptError, 'NOSCRIPT No matching script. Please use EVAL.'],
    ];
    for (const [predicate, line] of cases) {
      expect(predicate(reply(line))).toBe(true);
      // the prefix only: the same words later in a message do not count
      expect(predicate(reply(`ERR something about ${line}`))).toBe(false);
      for (const [other, otherLine] of cases)
        if (other !== predicate) expect(predicate(reply(otherLine))).toBe(false);
      for (const value of NOT_ERRORS) expect(predicate(value)).toBe(false);
    }
  });

  it("isNoSuchKeyError: XINFO's reply for a missing stream, in any case", () => {
    expect(isNoSuchKeyError(reply('ERR no such key'))).toBe(true);
    expect(isNoSuchKeyError(reply('ERR No Such Key'))).toBe(true);
    expect(isNoSuchKeyError(reply('ERR syntax error'))).toBe(false);
    for (const value of NOT_ERRORS) expect(isNoSuchKeyError(value)).toBe(false);
  });

  it('RedisDeadlineError names the command, the deadline and that the link is being replaced', () => {
    const err = new RedisDeadlineError('XAUTOCLAIM', 2500);
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('RedisDeadlineError');
    expect(err.message).toBe(
      'XAUTOCLAIM got no reply within 2500 ms; the connection was dropped and is being replaced',
    );
  });

  it.each(['redis-errors.ts', 'stream-roles.ts'])(
    '%s imports nothing at runtime (the engine loads no ioredis through it)',
    (file) => {
      // ESM-safe: no __dirname; jest runs from the repository root
      const source = readFileSync(join(process.cwd(), 'lib/redis', file), 'utf8');
      const imports = source.match(/^(import|export)\b[^;]*\bfrom\s+['"][^'"]+['"]/gm) ?? [];
      const runtime = imports.filter((line) => !/^(import|export)\s+type\b/.test(line));
      expect(runtime).toEqual([]);
      expect(source).not.toMatch(/\brequire\(|\bimport\(/);
    },
  );
});
