/**
 * apt with a private state: its own sources list, package lists and cache in a folder of ours, so
 * the machine's own apt state (its lists, its cache, what is installed) is left as it is. The
 * archive is the one the machine already uses: its URI (and keyring) are read from the machine's
 * apt sources, never written here.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** An archive that cannot be reached, or that lacks a suite: the caller says NOT TESTED. */
export class ArchiveUnavailableError extends Error {}

const SOURCES_DIR = '/etc/apt/sources.list.d';
const SOURCES_LIST = '/etc/apt/sources.list';

/**
 * The Debian archive the machine's apt uses (not its security archive): `{ uri, signedBy }` from
 * the first `deb` entry of /etc/apt/sources.list (one-line style), then
 * /etc/apt/sources.list.d/*.sources (deb822) and *.list.
 */
export function machineArchive() {
  let names = [];
  try {
    names = fs
      .readdirSync(SOURCES_DIR)
      .filter((f) => f.endsWith('.sources') || f.endsWith('.list'))
      .sort();
  } catch {
    // no sources.list.d
  }
  const files = [];
  for (const file of [SOURCES_LIST, ...names.map((f) => path.join(SOURCES_DIR, f))]) {
    try {
      files.push({ path: file, text: fs.readFileSync(file, 'utf8') });
    } catch {
      // absent or unreadable: not a source
    }
  }
  return archiveFrom(files);
}

/**
 * The first enabled `deb` entry of `files` (`{ path, text }`: `.sources` files are deb822, others
 * one-line) that names a suite other than a security one, as `{ uri, signedBy }`.
 */
export function archiveFrom(files) {
  const entries = files.flatMap((f) =>
    f.path.endsWith('.sources') ? deb822Entries(f.text) : oneLineEntries(f.text),
  );
  const main = entries.find(
    (e) => e.types.includes('deb') && e.suites.some((s) => !/-security$|\/updates$/.test(s)),
  );
  if (!main) {
    throw new ArchiveUnavailableError(
      `no Debian archive in the machine's apt sources (${SOURCES_LIST}, ${SOURCES_DIR}/)`,
    );
  }
  return { uri: main.uri, signedBy: main.signedBy };
}

function deb822Entries(text) {
  return text
    .split(/\n\s*\n/)
    .map((stanza) => {
      const fields = {};
      for (const line of stanza.split('\n')) {
        const m = /^([A-Za-z-]+):\s*(.*)$/.exec(line);
        if (m) fields[m[1].toLowerCase()] = m[2].trim();
      }
      if (fields.enabled === 'no' || !fields.uris) return undefined;
      return {
        types: (fields.types ?? '').split(/\s+/),
        uri: fields.uris.split(/\s+/)[0],
        suites: (fields.suites ?? '').split(/\s+/),
        signedBy:
          fields['signed-by'] && !fields['signed-by'].includes('\n')
            ? fields['signed-by']
            : undefined,
      };
    })
    .filter(Boolean);
}

function oneLineEntries(text) {
  return text
    .split('\n')
    .map((line) => line.replace(/#.*/, '').trim())
    .map((line) => /^(deb)\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)/.exec(line))
    .filter(Boolean)
    .map((m) => ({
      types: [m[1]],
      uri: m[3],
      suites: [m[4]],
      signedBy: /signed-by=(\S+)/.exec(m[2] ?? '')?.[1],
    }));
}

/** apt (`apt-get`, `apt-cache`) on a private state in `dir`, reading `suites` of the machine's archive. */
export class PrivateApt {
  constructor(dir, suites) {
    this.dir = dir;
    this.suites = suites;
    const archive = machineArchive();
    for (const sub of [
      'lists/partial',
      'cache/archives/partial',
      'sources.list.d',
      'preferences.d',
    ]) {
      fs.mkdirSync(path.join(dir, sub), { recursive: true });
    }
    const opts = archive.signedBy ? ` [signed-by=${archive.signedBy}]` : '';
    const list = suites.map((s) => `deb${opts} ${archive.uri} ${s} main`).join('\n') + '\n';
    fs.writeFileSync(path.join(dir, 'sources.list'), list);
    this.options = [
      ['Dir::Etc::SourceList', path.join(dir, 'sources.list')],
      ['Dir::Etc::SourceParts', path.join(dir, 'sources.list.d')],
      ['Dir::Etc::Preferences', path.join(dir, 'preferences')],
      ['Dir::Etc::PreferencesParts', path.join(dir, 'preferences.d')],
      ['Dir::State::Lists', path.join(dir, 'lists')],
      ['Dir::Cache', path.join(dir, 'cache')],
      // what the machine has installed plays no part in which version we pick
      ['Dir::State::status', '/dev/null'],
      ['APT::Sandbox::User', os.userInfo().username],
      ['Acquire::Retries', '1'],
      ['Acquire::http::Timeout', '20'],
      ['Acquire::https::Timeout', '20'],
    ].flatMap(([k, v]) => ['-o', `${k}=${v}`]);
  }

  /** `apt-get update` of the private lists; an unreachable archive throws ArchiveUnavailableError. */
  async update() {
    try {
      await this.run('apt-get', ['-q', 'update', '--error-on=any']);
    } catch (err) {
      if (err.code === 'ENOENT')
        throw new ArchiveUnavailableError('apt-get not found: not a Debian system');
      // `Err:1 <uri> <suite> InRelease` then, indented, why (`Could not connect to ...`)
      const m = /^Err:\S*\s+(.*)\n\s+(.*)$/m.exec(err.output ?? '');
      const why = m ? `${m[1].trim()}: ${m[2].trim()}` : String(err.message).split('\n')[0];
      throw new ArchiveUnavailableError(`archive unreachable (${why})`);
    }
  }

  /** Every `{ version, suite }` of `pkg` in the private lists (`apt-cache madison`). */
  async versions(pkg) {
    const { stdout } = await this.run('apt-cache', ['madison', pkg]);
    return stdout
      .split('\n')
      .map((line) => line.split('|').map((f) => f.trim()))
      .filter((f) => f.length >= 3 && f[0] === pkg)
      .map(([, version, from]) => ({
        version,
        suite: /\s(\S+?)\/\S+\s+\S+\s+Packages$/.exec(from)?.[1],
      }));
  }

  /** The record of `spec` (`pkg=version` or `pkg/suite`) as fields, or undefined when absent. */
  async show(spec) {
    return (await this.showMany([spec]))[0];
  }

  /** The records of `specs`, in their order; a spec apt does not know has none. */
  async showMany(specs) {
    const { stdout } = await this.run('apt-cache', ['show', '--no-all-versions', ...specs]).catch(
      (err) => ({ stdout: err.output ?? '' }),
    );
    return stdout
      .split(/\n\s*\n/)
      .map((record) => {
        const fields = {};
        for (const m of record.matchAll(/^([A-Za-z-]+): (.*)$/gm)) fields[m[1]] ??= m[2];
        return fields;
      })
      .filter((fields) => fields.Package);
  }

  /** `apt-get download` of `specs` into `dir`. */
  async download(specs, dir) {
    try {
      await this.run('apt-get', ['-q', 'download', ...specs], { cwd: dir });
    } catch (err) {
      const line =
        /^(E|Err):.*$/m.exec(err.output ?? '')?.[0] ?? String(err.message).split('\n')[0];
      throw new ArchiveUnavailableError(`download failed: ${line.trim()}`);
    }
  }

  run(cmd, args, { cwd } = {}) {
    return new Promise((resolve, reject) => {
      execFile(
        cmd,
        [...this.options, ...args],
        { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, LC_ALL: 'C' } },
        (err, stdout, stderr) => {
          if (!err) return resolve({ stdout, stderr });
          err.output = `${stdout}\n${stderr}`;
          reject(err);
        },
      );
    });
  }
}
