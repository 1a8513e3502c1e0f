/**
 * The `echo-stream` CLI (built `dist/cli/main.js`) is safe to point at by default, against real
 * redis-servers:
 * - it never prints a credential: whatever a password holds (`/ @ : %`, percent-encoded or not,
 *   in the user info or in `?password=`), nothing of it shows on stdout or stderr, and the
 *   command still connects when the URL is valid; a URL that does not parse is `<invalid URL>`;
 * - invisible characters (bidirectional controls, zero-width ones, escape sequences) in names,
 *   ids, values and errors are printed escaped (`\u202E`), in --json too (still valid JSON);
 * - `redrive` moves data only when asked to: `--dry-run` moves nothing, without a terminal it
 *   needs `--yes` (exit code 2 otherwise), on a terminal it asks, and it says how many moved.
 */
import type { Redis } from 'ioredis';
import {
  runCliOnTerminal,
  runCliProcess as cli,
  scriptAvailable,
  type CliRun,
} from '../support/cli-process';
import { runCliInProcess } from '../support/cli-in-process';
import { freePort, RedisServer, stopAllRedisServers } from '../support/redis-server';

let server: RedisServer;
let redis: Redis;
let n = 0;
const fresh = () => `cli-safety-${process.pid}-${++n}`;

/**
 * Passwords of the default user of the locked server (one requirepass, the others added with
 * ACL SETUSER). Each holds characters a URL gives a meaning to; none shares three characters in
 * a row with anything the CLI prints by itself.
 */
const PASSWORDS = ['Zq/x@K:9%v', ':@/%Jq', 'Wv%41Zk', 'Mq x/Zw@Kj#', 'Zu:Jq/Kx?Vb', 'Qz%7CXj'];

/** Every substring of `secret` of at least 3 characters. */
function pieces(secret: string): string[] {
  const out: string[] = [];
  for (let i = 0; i + 3 <= secret.length; i++) out.push(secret.slice(i, i + 3));
  return out;
}

/** Nothing of `secret` (nor its percent-encoded form) in what the CLI printed. */
function expectNoSecret(run: CliRun, secret: string, url: string): void {
  const printed = run.stdout + run.stderr;
  expect({ url, printed, leaked: printed.includes(secret) }).toEqual({
    url,
    printed,
    leaked: false,
  });
  expect({ url, encoded: printed.includes(encodeURIComponent(secret)) }).toEqual({
    url,
    encoded: false,
  });
  for (const piece of pieces(secret)) {
    expect({ url, piece, found: printed.includes(piece) }).toEqual({ url, piece, found: false });
  }
}

/**
 * A matrix of passwords x URL forms: every case through the CLI's command function in this
 * process, and each URL form once more as a real process with the first password (what a child
 * writes outside the CLI's own output would show there).
 */
async function matrix(
  cases: Array<{ password: string; url: string }>,
  args: (url: string) => string[],
): Promise<CliRun[]> {
  const inProcess = await eachLimited(cases, ({ url }) => runCliInProcess(args(url)));
  const once = cases.filter((c) => c.password === PASSWORDS[0]);
  const processes = await eachLimited(once, ({ url }) => cli(args(url)));
  return [...inProcess, ...processes];
}

/** `run` over `items`, three at a time (each a CLI process), results in order. */
async function eachLimited<T, R>(items: T[], run: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await run(items[i]);
    }
  };
  await Promise.all([worker(), worker(), worker()]);
  return results;
}

beforeAll(async () => {
  server = await RedisServer.start();
  redis = server.client();
});

afterAll(async () => {
  await stopAllRedisServers();
});

describe('echo-stream CLI never prints a credential', () => {
  let locked: RedisServer;
  let hostPort: string;

  beforeAll(async () => {
    locked = await RedisServer.start({ password: PASSWORDS[0] });
    hostPort = `127.0.0.1:${locked.port}`;
    const admin = locked.client();
    await admin.call('ACL', 'SETUSER', 'default', ...PASSWORDS.slice(1).map((p) => `>${p}`));
    admin.disconnect();
  });

  afterAll(async () => {
    await locked.stop();
  });

  it('percent-encoded passwords (user info, no scheme, ?password=): connects, shows nothing of them', async () => {
    const forms = PASSWORDS.flatMap((password) => {
      const enc = encodeURIComponent(password);
      return [
        `redis://:${enc}@${hostPort}`,
        `redis://default:${enc}@${hostPort}/0`,
        `redis://${hostPort}?password=${enc}`,
        `redis://${hostPort}/0?db=0&password=${enc}`,
        `:${enc}@${hostPort}`,
        `${hostPort}?password=${enc}`,
      ].map((url) => ({ password, url }));
    });
    const runs = await matrix(forms, (url) => ['--url', url, '--json', 'streams']);
    const cases = [...forms, ...forms.filter((c) => c.password === PASSWORDS[0])];
    expect(runs).toHaveLength(6 * PASSWORDS.length + 6);
    cases.forEach(({ password, url }, i) => {
      expect({ url, code: runs[i].code, stdout: runs[i].stdout }).toEqual({
        url,
        code: 0,
        stdout: '[]\n',
      });
      expectNoSecret(runs[i], password, url);
    });
    // an error of the command itself (a missing key) after connecting
    const inspectNope = (password: string) => [
      '--url',
      `redis://:${encodeURIComponent(password)}@${hostPort}`,
      'inspect',
      'nope',
    ];
    const missing = [
      ...(await eachLimited(PASSWORDS, (password) => runCliInProcess(inspectNope(password)))),
      await cli(inspectNope(PASSWORDS[0])),
    ];
    [...PASSWORDS, PASSWORDS[0]].forEach((password, i) => {
      expect([missing[i].code, missing[i].stderr]).toEqual([
        1,
        expect.stringMatching(/no such key/),
      ]);
      expectNoSecret(missing[i], password, 'inspect');
    });
  }, 180_000);

  it('passwords written as they are (not encoded), in every URL form: refused or used, never shown', async () => {
    const forms = PASSWORDS.flatMap((p) =>
      [
        `redis://:${p}@${hostPort}`,
        `redis://default:${p}@${hostPort}`,
        `rediss://default:${p}@${hostPort}`,
        `redis://${hostPort}?password=${p}`,
        `redis://${hostPort}/0?password=${p}&db=1`,
        `redis://:${p}@c@${hostPort}/0?password=${p}&db=1`,
        `:${p}@${hostPort}`,
        `${hostPort}?password=${p}`,
      ].map((url) => ({ password: p, url })),
    );
    const runs = await matrix(forms, (url) => ['--url', url, 'streams']);
    const cases = [...forms, ...forms.filter((c) => c.password === PASSWORDS[0])];
    expect(runs).toHaveLength(8 * PASSWORDS.length + 8);
    cases.forEach(({ password, url }, i) => {
      const run = runs[i];
      expectNoSecret(run, password, url);
      if (run.code === 0) return; // the URL was valid and the password reached Redis intact
      expect({ url, code: run.code, lines: run.stderr.trimEnd().split('\n').length }).toEqual({
        url,
        code: 1,
        lines: 1,
      });
      expect({ url, stderr: run.stderr }).toEqual({
        url,
        stderr: expect.stringMatching(
          /<invalid URL> \(.+\)|refused the credentials|cannot connect to Redis at rediss?:\/\/\*\*\*@127\.0\.0\.1:\d+: /,
        ),
      });
    });
  }, 180_000);

  it("the reported cases: '/', '@' and ?password= in a refused connection's error", async () => {
    const closed = `127.0.0.1:${await freePort()}`;
    const cases: Array<[string, string]> = [
      [`redis://:se/cret@${closed}`, 'se/cret'],
      [`redis://:a/b@c@${closed}/0?password=x&db=1`, 'a/b@c'],
      [`redis://:pa@ss@${closed}`, 'pa@ss'],
      [`redis://${closed}?password=Zk9Wq2`, 'Zk9Wq2'],
      [`redis://:pa:ss@${closed}`, 'pa:ss'],
      [`rediss://user:p%40ssWq@${closed}`, 'p%40ssWq'],
    ];
    for (const [url, password] of cases) {
      const run = await cli(['--url', url, 'streams']);
      expect(run.code).toBe(1);
      expect({ url, stderr: run.stderr }).toEqual({
        url,
        stderr: expect.not.stringContaining(password),
      });
      expect({ url, stderr: run.stderr }).toEqual({
        url,
        stderr: expect.stringMatching(
          new RegExp(
            `^echo-stream streams: (cannot use the Redis URL <invalid URL> \\(.+\\)|cannot connect to Redis at rediss?://(\\*\\*\\*@)?${closed}: )`,
          ),
        ),
      });
    }
    const encoded = await cli(['--url', `redis://:p%40ssWq@${closed}`, 'streams']);
    expect(encoded.stderr).toBe(
      `echo-stream streams: cannot connect to Redis at redis://***@${closed}: connect ECONNREFUSED ${closed}\n`,
    );
    // a URL typed where the command or a value was expected (--url forgotten)
    for (const args of [
      [`redis://:se/cret@${closed}`, 'streams'],
      [`redis://:Zk9Wq2@${closed}`, 'streams'],
      ['--url', `redis://${closed}`, 'tail', 'x', '--count', `redis://:se/cret@${closed}`],
    ]) {
      const typo = await cli(args);
      expect([typo.code, typo.stderr]).toEqual([1, expect.stringMatching(/<invalid URL>|\*\*\*@/)]);
      expect(typo.stderr).not.toMatch(/se\/cret|Zk9Wq2/);
    }
    // $REDIS_URL is shown by the same rule
    const fromEnv = await cli(['streams'], { REDIS_URL: `redis://:se/cret@${closed}` });
    expect([fromEnv.code, fromEnv.stderr]).toEqual([1, expect.stringContaining('<invalid URL>')]);
    expect(fromEnv.stderr).not.toContain('se/cret');
  });

  it('a URL holding escape sequences, newlines or spaces: one line, no control character', async () => {
    const closed = `127.0.0.1:${await freePort()}`;
    for (const url of [
      `redis://${closed}\u001b[2J\u001b]0;owned\u0007`,
      `redis://:pw\nEVIL LINE@${closed}`,
      `redis://${closed}/0\u202E`,
      `  redis://:Wq Zk@${closed}  `,
      'not a url at all \u001b[31m',
    ]) {
      const run = await cli(['--url', url, 'streams']);
      expect(run.code).toBe(1);
      expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(run.stderr.trimEnd()).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202E]/);
      expect(run.stderr).not.toMatch(/EVIL|owned|Wq Zk/);
    }
  });
});

describe('echo-stream CLI shows invisible characters escaped', () => {
  const RLO = '\u202E';

  it('a stream named rtl\\u202Egnp.exe shows as rtl\\u202Egnp.exe, in text and in --json', async () => {
    const stream = `${fresh()}-rtl${RLO}gnp.exe`;
    const shown = stream.replace(RLO, '\\u202E');
    await redis.xadd(stream, '*', 'id', `zw\u200Bsp`, 'data', `iso\u2066late\u2069 \u001b[31mred`);
    await redis.xgroup('CREATE', stream, `gr\u200Foup`, '0');
    await redis.xreadgroup('GROUP', `gr\u200Foup`, `con\uFEFFsumer\u2060`, 'STREAMS', stream, '>');
    await redis.xadd(
      `${stream}:dlq`,
      '*',
      'dlq_reason',
      'max_deliveries',
      'dlq_stream',
      stream,
      'dlq_group',
      `gr\u200Foup`,
      'dlq_error',
      `boom\u061C\u202Dhidden`,
      'id',
      'x',
    );

    const text = await cli(['--url', server.url, 'streams']);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(shown);
    expect(text.stdout).not.toContain(RLO);

    const inspect = await cli(['--url', server.url, 'inspect', stream]);
    expect(inspect.stdout).toContain(`stream ${shown}:`);
    expect(inspect.stdout).toContain('gr\\u200Foup');
    expect(inspect.stdout).toContain('con\\uFEFFsumer\\u2060');

    const tail = await cli(['--url', server.url, 'tail', stream]);
    expect(tail.stdout).toContain('zw\\u200Bsp');
    expect(tail.stdout).toContain('iso\\u2066late\\u2069 \\u001B[31mred');

    const letters = await cli(['--url', server.url, 'dead-letters', stream]);
    expect(letters.stdout).toContain('boom\\u061C\\u202Dhidden');

    const missing = await cli(['--url', server.url, 'inspect', `no${RLO}such`]);
    expect(missing.stderr).toContain("no such key 'no\\u202Esuch'");

    for (const run of [text, inspect, tail, letters, missing]) {
      const printed = run.stdout + run.stderr;
      expect(printed).not.toMatch(
        /[\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\u061C\uFEFF\u001b]/,
      );
    }

    // --json: still valid JSON, the characters escaped JSON's way, the values intact
    const json = await cli(['--url', server.url, '--json', 'streams']);
    expect(json.stdout).not.toContain(RLO);
    expect(json.stdout).toContain(shown);
    expect(JSON.parse(json.stdout)).toContainEqual({ stream, length: 1, groups: 1 });
    const jsonTail = await cli(['--url', server.url, '--json', 'tail', stream]);
    expect(jsonTail.stdout).not.toMatch(/[\u200B\u2066\u2069]/);
    expect(JSON.parse(jsonTail.stdout)[0].fields).toEqual({
      id: 'zw\u200Bsp',
      data: 'iso\u2066late\u2069 \u001b[31mred',
    });
  });
});

describe('echo-stream redrive moves data only when asked to', () => {
  /** A stream of 2 entries and `letters` dead letters of group `billing`. */
  async function withDeadLetters(letters: number): Promise<{ stream: string; ids: string[] }> {
    const stream = fresh();
    await redis.xadd(stream, '*', 'id', 'live-1');
    await redis.xadd(stream, '*', 'id', 'live-2');
    const ids: string[] = [];
    for (let i = 0; i < letters; i++) {
      ids.push(
        (await redis.xadd(
          `${stream}:dlq`,
          '*',
          'dlq_reason',
          'max_deliveries',
          'dlq_stream',
          stream,
          'dlq_group',
          'billing',
          'id',
          `dead-${i}`,
        ))!,
      );
    }
    return { stream, ids };
  }

  const lengths = async (stream: string) => [
    await redis.xlen(stream),
    await redis.xlen(`${stream}:dlq`),
  ];

  it('without a terminal and without --yes: refused with exit code 2, a line naming --yes, nothing moved', async () => {
    const { stream } = await withDeadLetters(3);
    const run = await cli(['--url', server.url, 'redrive', stream]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain('--yes');
    expect(await lengths(stream)).toEqual([2, 3]);
  });

  it('--dry-run says how many and which would move, and moves nothing', async () => {
    const { stream, ids } = await withDeadLetters(25);
    const run = await cli(['--url', server.url, 'redrive', stream, '--dry-run']);
    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`dry run: would move 25 dead letters back to ${stream}; moved 0`);
    expect(lines.slice(1, 21)).toEqual(ids.slice(0, 20).map((id) => `  ${id}`));
    expect(lines[21]).toBe('  ... and 5 more');
    expect(await lengths(stream)).toEqual([2, 25]);

    const counted = await cli([
      '--url',
      server.url,
      '--json',
      'redrive',
      stream,
      '--dry-run',
      '--count',
      '3',
    ]);
    expect(JSON.parse(counted.stdout)).toEqual({
      stream,
      dryRun: true,
      wouldMove: 3,
      entryIds: ids.slice(0, 3),
      moved: 0,
    });
    // --yes does not override --dry-run
    const both = await cli(['--url', server.url, 'redrive', stream, '--dry-run', '--yes']);
    expect(both.code).toBe(0);
    expect(await lengths(stream)).toEqual([2, 25]);
  });

  it('--yes moves and says how many; 0 matched prints "moved 0 dead letters" with exit code 0', async () => {
    const { stream } = await withDeadLetters(3);
    const some = await cli(['--url', server.url, 'redrive', stream, '--count', '2', '--yes']);
    expect([some.code, some.stdout]).toEqual([0, `moved 2 dead letters back to ${stream}\n`]);
    expect(await lengths(stream)).toEqual([4, 1]);

    const none = await cli(['--url', server.url, 'redrive', stream, '--group', 'nobody', '-y']);
    expect([none.code, none.stdout]).toEqual([0, `moved 0 dead letters back to ${stream}\n`]);
    expect(await lengths(stream)).toEqual([4, 1]);
  });

  const onTerminal = scriptAvailable() ? it : it.skip;

  onTerminal(
    'on a terminal it asks; "n" moves nothing, "y" moves the dead letters it named',
    async () => {
      const { stream } = await withDeadLetters(3);
      const prompt = new RegExp(
        `Move 3 dead letters of ${stream} back to their streams\\? \\[y/N\\] `,
      );

      const declined = await runCliOnTerminal(
        ['--url', server.url, 'redrive', stream],
        prompt,
        'n\n',
      );
      expect(declined.asked).toBe(true);
      expect(declined.code).toBe(1);
      expect(declined.output).toContain('not confirmed: moved 0 dead letters');
      expect(await lengths(stream)).toEqual([2, 3]);

      // Ctrl-C at the question: a no
      const interrupted = await runCliOnTerminal(
        ['--url', server.url, 'redrive', stream],
        prompt,
        '\u0003',
      );
      expect([interrupted.asked, interrupted.code]).toEqual([true, 1]);
      expect(await lengths(stream)).toEqual([2, 3]);

      const confirmed = await runCliOnTerminal(
        ['--url', server.url, 'redrive', stream],
        prompt,
        'y\n',
      );
      expect(confirmed.asked).toBe(true);
      expect(confirmed.code).toBe(0);
      expect(confirmed.output).toContain(`moved 3 dead letters back to ${stream}`);
      expect(await lengths(stream)).toEqual([5, 0]);

      // nothing to move: no question, "moved 0"
      const empty = await runCliOnTerminal(['--url', server.url, 'redrive', stream], prompt, 'y\n');
      expect([empty.asked, empty.code]).toEqual([false, 0]);
      expect(empty.output).toContain(`moved 0 dead letters back to ${stream}`);
    },
  );

  onTerminal('on a terminal with --yes: no question', async () => {
    const { stream } = await withDeadLetters(2);
    const run = await runCliOnTerminal(
      ['--url', server.url, 'redrive', stream, '--yes'],
      /\[y\/N\]/,
      'n\n',
    );
    expect([run.asked, run.code]).toEqual([false, 0]);
    expect(await lengths(stream)).toEqual([4, 0]);
  });
});
