/**
 * The pure parts of the server matrix (scripts/servers.mjs, scripts/lib/echo-server.mjs): which
 * archive the machine's apt sources name, which build `ECHO_SERVER` picks, and the loader command
 * a fetched build's `server.json` turns into. No apt, no network.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ArchiveUnavailableError, archiveFrom } from '../../scripts/lib/apt-private.mjs';
import { chosenServer, serverCommand } from '../../scripts/lib/echo-server.mjs';

const KEYRING = '/usr/share/keyrings/debian-archive-keyring.gpg';

describe('archiveFrom: the archive of the machine apt sources', () => {
  it('deb822: skips the security stanza and a disabled one, keeps the URI and keyring', () => {
    const text = [
      'Types: deb',
      'URIs: http://security.example/debian-security',
      'Suites: bookworm-security',
      'Components: main',
      '',
      'Types: deb',
      'URIs: http://disabled.example/debian',
      'Suites: bookworm',
      'Enabled: no',
      '',
      'Types: deb deb-src',
      '# a comment line',
      'URIs: http://mirror.example/debian',
      'Suites: bookworm bookworm-updates',
      'Components: main',
      `Signed-By: ${KEYRING}`,
    ].join('\n');
    expect(archiveFrom([{ path: '/etc/apt/sources.list.d/debian.sources', text }])).toEqual({
      uri: 'http://mirror.example/debian',
      signedBy: KEYRING,
    });
  });

  it('one-line style: options in brackets, comments and deb-src lines ignored', () => {
    const text = [
      '# deb http://commented.example/debian bookworm main',
      'deb-src http://src.example/debian bookworm main',
      'deb http://security.example/debian-security bookworm-security main',
      `deb [arch=amd64 signed-by=${KEYRING}] http://mirror.example/debian bookworm main`,
    ].join('\n');
    expect(archiveFrom([{ path: '/etc/apt/sources.list', text }])).toEqual({
      uri: 'http://mirror.example/debian',
      signedBy: KEYRING,
    });
  });

  it('no usable entry: ArchiveUnavailableError (the matrix says NOT TESTED)', () => {
    expect(() => archiveFrom([{ path: '/etc/apt/sources.list', text: '' }])).toThrow(
      ArchiveUnavailableError,
    );
  });
});

describe('ECHO_SERVER and the command it starts', () => {
  const saved = { ...process.env };
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'echo-servers-unit-'));
    process.env.ECHO_SERVERS_DIR = dir;
    delete process.env.REDIS_SERVER_BIN;
  });
  afterEach(() => {
    process.env = { ...saved };
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('defaults to redis7, the redis-server on PATH (REDIS_SERVER_BIN still honoured)', () => {
    expect(chosenServer({})).toBe('redis7');
    expect(serverCommand('redis7')).toMatchObject({ command: 'redis-server', args: [] });
    process.env.REDIS_SERVER_BIN = '/opt/redis/bin/redis-server';
    expect(serverCommand('redis7').command).toBe('/opt/redis/bin/redis-server');
  });

  it('an unknown name throws, listing the known ones', () => {
    expect(() => chosenServer({ ECHO_SERVER: 'keydb' })).toThrow(
      'ECHO_SERVER=keydb is not a known server: use one of redis7, valkey8, valkey9, redis8, redis86',
    );
  });

  it('a build not fetched yet is unavailable and says how to fetch it', () => {
    const cmd = serverCommand('valkey9');
    expect(cmd.available).toBe(false);
    expect(cmd.reason).toMatch(/valkey9 is not fetched .*run 'npm run servers'/);
  });

  it('a fetched build runs through its own loader with its own libraries, paths from server.json', () => {
    const home = path.join(dir, 'redis8');
    fs.mkdirSync(home);
    fs.writeFileSync(
      path.join(home, 'server.json'),
      JSON.stringify({
        name: 'redis8',
        product: 'Redis',
        version: '5:8.0.6-3',
        suite: 'forky',
        loader: 'root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2',
        libraryPath: ['root/lib/x86_64-linux-gnu', 'root/usr/lib/x86_64-linux-gnu'],
        server: 'root/usr/bin/redis-server',
        cli: 'root/usr/bin/redis-cli',
      }),
    );
    const libs = `${home}/root/lib/x86_64-linux-gnu:${home}/root/usr/lib/x86_64-linux-gnu`;
    expect(serverCommand('redis8')).toEqual({
      name: 'redis8',
      label: 'Redis 5:8.0.6-3 (Debian forky)',
      command: `${home}/root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2`,
      args: ['--library-path', libs, `${home}/root/usr/bin/redis-server`],
      cli: {
        command: `${home}/root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2`,
        args: ['--library-path', libs, `${home}/root/usr/bin/redis-cli`],
      },
      available: true,
    });
  });
});
