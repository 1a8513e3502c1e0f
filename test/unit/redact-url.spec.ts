/**
 * How a Redis URL is shown (lib/config/redact-url.ts): credentials replaced whatever they hold,
 * secret-looking query parameters dropped, a URL that cannot be used never echoed, and the
 * output printable ASCII. The CLI, the module's options and the connection factory share it.
 */
import { redactUrl, redactUrlsIn, viewRedisUrl } from '../../lib/config/redact-url';

/** Every 3-character piece of `secret`. */
const pieces = (secret: string) =>
  Array.from({ length: Math.max(0, secret.length - 2) }, (_, i) => secret.slice(i, i + 3));

describe('redactUrl', () => {
  it('hides the user info of a valid URL and keeps host, port, db and harmless query', () => {
    expect(redactUrl('redis://127.0.0.1:6379')).toBe('redis://127.0.0.1:6379');
    expect(redactUrl('redis://:hunter2@h:1')).toBe('redis://***@h:1');
    expect(redactUrl('rediss://user:p%40ss@h:1')).toBe('rediss://***@h:1');
    expect(redactUrl('redis://user@h:1/2')).toBe('redis://***@h:1/2');
    expect(redactUrl('redis://:pa:ss@h')).toBe('redis://***@h');
    expect(redactUrl('REDIS://:x@[::1]:6379/0')).toBe('redis://***@[::1]:6379/0');
    expect(redactUrl('redis://h:1/0?db=1&password=x&family=6')).toBe('redis://h:1/0?db=1&family=6');
    expect(redactUrl('redis://h:1?Password=x&username=u&pass%77ord=y')).toBe('redis://h:1');
    // without scheme (ioredis reads it as redis://...), a socket path
    expect(redactUrl(':pw@h:1')).toBe('redis://***@h:1');
    expect(redactUrl('h:1?password=pw')).toBe('redis://h:1');
    expect(redactUrl('//:pw@h:1')).toBe('redis://***@h:1');
    expect(redactUrl('/tmp/redis.sock?password=pw&db=2')).toBe('/tmp/redis.sock?db=2');
  });

  it('a URL that cannot be used is <invalid URL> with a reason, nothing of it echoed', () => {
    const hostile: Array<[string, string]> = [
      ['redis://:se/cret@127.0.0.1:7399', 'se/cret'],
      ['redis://:a/b@c@127.0.0.1:7399/0?password=xyz&db=1', 'a/b@c'],
      ['redis://user:12?ss@h:1', '12?ss'],
      ['redis://:ab#cd@h:1', 'ab#cd'],
      ['redis://:50%off@h:1', '50%off'],
      ['redis://h:1/0?password=a@bcd', 'a@bcd'],
      ['redis://:pw@h:1#fr@gXq', 'fr@gXq'],
      ['redis://h\u001b[31m:1', '\u001b[31m'],
      ['not a url \u202E at all', 'url'],
    ];
    for (const [url, secret] of hostile) {
      const shown = redactUrl(url);
      expect({ url, shown }).toEqual({
        url,
        shown: expect.stringMatching(/^<invalid URL> \(.+\)$/),
      });
      for (const piece of pieces(secret)) {
        expect({ url, piece, found: shown.includes(piece) }).toEqual({ url, piece, found: false });
      }
      expect(viewRedisUrl(url).valid).toBe(false);
    }
    expect(redactUrl('redis://:se/cret@h:1')).toContain('percent-encode');
  });

  it('prints only printable ASCII, whatever the URL holds', () => {
    for (const url of [
      'redis://h\u202E:1/0',
      'redis://:p\u200Bw@h:1/0?name=a\u001b[2Jb',
      '  redis://h:1\n',
      'redis://:pw\nEVIL@h:1',
      '/tmp/s\u001b.sock?db=\u202E',
      '/tmp/\ud800.sock',
    ]) {
      expect({ url, shown: redactUrl(url) }).toEqual({
        url,
        shown: expect.stringMatching(/^[\x20-\x7e]*$/),
      });
      expect(redactUrl(url)).not.toContain('EVIL');
    }
  });

  it('redacts every URL in a driver text, and leaves a redacted one as it is', () => {
    expect(redactUrlsIn('cannot parse redis://user:hunter2@host:6379/0, giving up')).toBe(
      'cannot parse redis://***@host:6379/0, giving up',
    );
    expect(redactUrlsIn('at redis://***@h:1: refused')).toBe('at redis://***@h:1: refused');
    expect(redactUrlsIn('bad rediss://:se/cret@h:1.')).toBe('bad <invalid URL>.');
    expect(redactUrlsIn('no url here')).toBe('no url here');
  });
});
