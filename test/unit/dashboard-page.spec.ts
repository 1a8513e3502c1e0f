/** The dashboard's pure parts: the rate history behind the sparklines, and the page template. */
import { renderPage } from '../../lib/dashboard/dashboard-page';
import { RateHistory } from '../../lib/dashboard/views/rate-history';

describe('RateHistory', () => {
  it('keeps one sample per second at most, the last 60, per group', () => {
    const history = new RateHistory();
    expect(history.record('s', 'g', 1, 2, 1000)).toEqual({ tpsIn: [1], tpsOut: [2] });
    // a second open page reading 100 ms later adds nothing
    expect(history.record('s', 'g', 5, 5, 1100)).toEqual({ tpsIn: [1], tpsOut: [2] });
    expect(history.record('s', 'other', 7, 8, 1100)).toEqual({ tpsIn: [7], tpsOut: [8] });
    let last = history.record('s', 'g', 0, 0, 2000);
    for (let i = 3; i <= 70; i++) last = history.record('s', 'g', i, i, i * 1000);
    expect(last.tpsIn).toHaveLength(60);
    expect(last.tpsIn[0]).toBe(11);
    expect(last.tpsOut[59]).toBe(70);
  });
});

describe('RateHistory.rateOf', () => {
  it('is null at first, then the growth per second since the last reading a second ago', () => {
    const history = new RateHistory();
    expect(history.rateOf('k', 100, 0)).toBeNull();
    expect(history.rateOf('k', 150, 500)).toBeNull(); // too soon: the last rate (none yet)
    expect(history.rateOf('k', 300, 2000)).toBe(100);
    expect(history.rateOf('k', 999, 2100)).toBe(100); // too soon again: unchanged
    expect(history.rateOf('k', 5, 4000)).toBeNull(); // went back (recreated key): starts over
    expect(history.rateOf('k', null, 5000)).toBeNull();
  });
});

describe('renderPage', () => {
  const html =
    '<html data-base="{{BASE}}" data-read-only="{{READ_ONLY}}"><script src="{{BASE}}/a.js">';

  it('puts the mount path (query and trailing slash dropped) where the template says', () => {
    expect(renderPage(html, '/ops/echo-stream/?x=1', false)).toBe(
      '<html data-base="/ops/echo-stream" data-read-only="false"><script src="/ops/echo-stream/a.js">',
    );
  });

  it('escapes the path, so a crafted URL cannot add markup', () => {
    const page = renderPage(html, '/echo-stream"><script>alert(1)</script>', true);
    expect(page).not.toContain('<script>alert');
    // the path is read as a URL path (quotes and brackets percent-encoded), then HTML-escaped
    expect(page).toContain('data-base="/echo-stream%22%3E%3Cscript%3Ealert(1)%3C/script%3E"');
    expect(renderPage(html, "/a'&b", true)).toContain('data-base="/a&#39;&#38;b"');
  });

  it('uses only the path of the request target: no foreign host reaches the page', () => {
    const expected =
      '<html data-base="/echo-stream" data-read-only="true"><script src="/echo-stream/a.js">';
    for (const target of [
      'http://other.example/echo-stream',
      'https://user@other.example:8443/echo-stream/?q=1',
      '//other.example/echo-stream',
      '/\\other.example/echo-stream',
    ]) {
      expect([target, renderPage(html, target, true)]).toEqual([target, expected]);
    }
  });
});
