/**
 * Connection-error classification (lib/redis/connection/connection-failure.ts): what a person reads when
 * Redis is unreachable. Socket and TLS errors are real ones (a closed port, a TLS client talking
 * to a plain TCP server); driver and reply errors are built as ioredis 5 and 6 build them.
 */
import * as net from 'node:net';
import * as tls from 'node:tls';
import { EchoStreamConfigError } from '../../lib';
import { resolveOptions } from '../../lib/config/module-options';
import {
  classifyConnectionError,
  failureText,
  isLinkDownSymptom,
  maskCredentials,
} from '../../lib/redis/connection/connection-failure';
import { startPlainTextServer } from '../support/plain-text-server';
import { freePort } from '../support/redis-server';

function named(name: string, message: string, code?: string): Error {
  const err = new Error(message);
  err.name = name;
  if (code !== undefined) (err as Error & { code: string }).code = code;
  return err;
}

/** The error a socket of `connect` reports (a real one). */
function socketError(connect: () => net.Socket): Promise<Error> {
  return new Promise((resolve) => {
    const socket = connect();
    socket.once('error', (err) => {
      socket.destroy();
      resolve(err);
    });
  });
}

describe('classifyConnectionError', () => {
  it('a closed port is refused, with the address in the detail', async () => {
    const port = await freePort();
    const err = await socketError(() => net.connect({ host: '127.0.0.1', port }));
    expect(classifyConnectionError(err)).toEqual({
      reason: 'refused',
      detail: `connect ECONNREFUSED 127.0.0.1:${port}`,
    });
  });

  it('a TLS client facing a plain server is a TLS failure', async () => {
    const { port, close } = await startPlainTextServer();
    try {
      const err = await socketError(() => tls.connect({ host: '127.0.0.1', port }));
      expect(classifyConnectionError(err)).toEqual({
        reason: 'tls',
        // OpenSSL's long text, cut to its reason and code
        detail: expect.stringMatching(/^[a-z ]+, ERR_SSL_[A-Z_]+$/),
      });
    } finally {
      await close();
    }
  });

  it.each([
    ['getaddrinfo ENOTFOUND redis.invalid', 'ENOTFOUND', 'unknown_host'],
    ['getaddrinfo EAI_AGAIN redis.internal', 'EAI_AGAIN', 'unknown_host'],
    ['connect EHOSTUNREACH 10.0.0.9:6379', 'EHOSTUNREACH', 'unreachable'],
    ['connect ETIMEDOUT', 'ETIMEDOUT', 'timeout'],
    ['read ECONNRESET', 'ECONNRESET', 'closed'],
    ['self-signed certificate', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'tls'],
    ['Hostname/IP does not match certificate', 'ERR_TLS_CERT_ALTNAME_INVALID', 'tls'],
  ])('%s (%s) -> %s', (message, code, reason) => {
    expect(classifyConnectionError(named('Error', message, code))).toEqual({
      reason,
      detail: message,
    });
  });

  it('auth failures, as a reply or inside ioredis 5 "Ready check failed"', () => {
    for (const message of [
      'WRONGPASS invalid username-password pair or user is disabled.',
      'NOAUTH Authentication required.',
      'Ready check failed: NOAUTH Authentication required.',
      'NOAUTH HELLO must be called with the client already authenticated',
      'ERR invalid password',
    ]) {
      expect(classifyConnectionError(named('ReplyError', message))?.reason).toBe('auth');
    }
  });

  it('a peer that is not Redis (ioredis 5 and 6 texts)', () => {
    expect(
      classifyConnectionError(named('ParserError', 'Protocol error, got "H" as reply type byte'))
        ?.reason,
    ).toBe('protocol');
    expect(
      classifyConnectionError(named('Error', 'Unknown RESP type 72 "H". Please report this.'))
        ?.reason,
    ).toBe('protocol');
  });

  it('a cluster error is classified by its last node error', () => {
    const err = named('ClusterAllFailedError', 'Failed to refresh slots cache.');
    (err as Error & { lastNodeError: Error }).lastNodeError = named(
      'Error',
      'connect ECONNREFUSED 127.0.0.1:7000',
      'ECONNREFUSED',
    );
    expect(classifyConnectionError(err)?.reason).toBe('refused');
    // ioredis's Cluster often passes on only the symptom: the cluster's own text is kept
    (err as Error & { lastNodeError: Error }).lastNodeError = named(
      'Error',
      'Connection is closed.',
    );
    expect(classifyConnectionError(err)).toEqual({
      reason: 'other',
      detail: 'Failed to refresh slots cache.',
    });
  });

  it('an error from another realm (a plain object with name and message) is still read', () => {
    const foreign = {
      name: 'Error',
      message: 'connect ECONNREFUSED 127.0.0.1:1',
      code: 'ECONNREFUSED',
    };
    expect(classifyConnectionError(foreign)?.reason).toBe('refused');
  });

  it('server replies and driver symptoms are not causes', () => {
    for (const message of [
      'WRONGTYPE Operation against a key holding the wrong kind of value',
      "OOM command not allowed when used memory > 'maxmemory'.",
      "NOPERM this user has no permissions to run the 'xack' command",
      'NOGROUP No such key or consumer group',
    ]) {
      expect(classifyConnectionError(named('ReplyError', message))).toBeUndefined();
    }
    const flushed = named(
      'MaxRetriesPerRequestError',
      'Reached the max retries per request limit (which is 0).',
    );
    expect(classifyConnectionError(flushed)).toBeUndefined();
    expect(isLinkDownSymptom(flushed)).toBe(true);
    expect(isLinkDownSymptom(named('Error', 'Connection is closed.'))).toBe(true);
    expect(isLinkDownSymptom(named('ReplyError', 'WRONGTYPE nope'))).toBe(false);
    expect(classifyConnectionError('ECONNREFUSED')).toBeUndefined();
  });
});

describe('texts', () => {
  it('phrase plus the driver words, credentials masked', () => {
    expect(failureText({ reason: 'refused', detail: 'connect ECONNREFUSED 127.0.0.1:1' })).toBe(
      'connection refused (connect ECONNREFUSED 127.0.0.1:1)',
    );
    expect(failureText({ reason: 'closed', detail: '' })).toBe('connection closed');
    expect(maskCredentials('cannot parse redis://user:hunter2@host:6379/0')).toBe(
      'cannot parse redis://***@host:6379/0',
    );
    expect(
      classifyConnectionError(named('Error', 'ETIMEDOUT rediss://:hunter2@h:1', 'ETIMEDOUT'))
        ?.detail,
    ).toBe('ETIMEDOUT rediss://***@h:1');
  });
});

describe('publishTimeoutMs option', () => {
  it('defaults to 2000 ms and takes an integer >= 1', () => {
    expect(resolveOptions({}).publishTimeoutMs).toBe(2000);
    expect(resolveOptions({ publishTimeoutMs: 250 }).publishTimeoutMs).toBe(250);
    for (const bad of [0, -1, 1.5, '500']) {
      expect(() => resolveOptions({ publishTimeoutMs: bad as number })).toThrow(
        EchoStreamConfigError,
      );
    }
    expect(() => resolveOptions({ publishTimeoutMs: 0 })).toThrow(
      "EchoStreamModule: option 'publishTimeoutMs' must be an integer >= 1, got number 0",
    );
  });
});
