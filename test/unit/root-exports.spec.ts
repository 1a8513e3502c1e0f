/**
 * The transport at the package root (lib/microservices/root-exports.ts), on the build (dist/, as
 * `npm test` builds it first), in child processes: the root loads without the optional peer
 * `@nestjs/microservices` (its resolution made to fail), a transport class then fails with an
 * error naming the peer, and with the peer the root's classes are the subpath's, for `require`
 * and for an ES module's named imports.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const DIST = path.resolve(process.cwd(), 'dist');

/**
 * Runs `code` in a child Node; with `withoutPeer` (CommonJS code), `@nestjs/microservices` does
 * not resolve in it.
 */
function node(code: string, { withoutPeer = false, esm = false } = {}): string {
  const hide = `
    const Module = require('node:module');
    const resolve = Module._resolveFilename;
    Module._resolveFilename = function (request, ...rest) {
      if (request === '@nestjs/microservices' || request.startsWith('@nestjs/microservices/')) {
        throw Object.assign(new Error("Cannot find module '" + request + "'"), { code: 'MODULE_NOT_FOUND' });
      }
      return resolve.call(this, request, ...rest);
    };`;
  return execFileSync(
    process.execPath,
    [...(esm ? ['--input-type=module'] : []), '-e', withoutPeer ? hide + code : code],
    { encoding: 'utf8', cwd: DIST },
  ).trim();
}

describe('the package root and @nestjs/microservices', () => {
  it('loads without the peer; a transport class names the missing peer on first use', () => {
    const out = node(
      `const root = require(${JSON.stringify(DIST)});
       const lines = [typeof root.EchoStreamModule, typeof root.EchoStreamRecordBuilder,
         String(Object.keys(root).includes('EchoStreamServer'))];
       try { root.EchoStreamServer; lines.push('loaded'); } catch (e) { lines.push(e.message); }
       console.log(lines.join('\\n'));`,
      { withoutPeer: true },
    );
    expect(out.split('\n')).toEqual([
      'function',
      'function',
      'true',
      "nestjs-echo-stream's microservices transport needs the optional peer " +
        '@nestjs/microservices (npm install @nestjs/microservices)',
    ]);
  });

  it("with the peer, the root's transport classes are the subpath's (require and import)", () => {
    const names = ['EchoStreamServer', 'EchoStreamClient', 'EchoStreamContext'];
    const same = node(
      `const root = require(${JSON.stringify(DIST)});
       const entry = require(${JSON.stringify(path.join(DIST, 'microservices'))});
       console.log(${JSON.stringify(names)}.map((n) => typeof root[n] === 'function' && root[n] === entry[n]).join());`,
    );
    expect(same).toBe('true,true,true');
    const imported = node(
      `import { EchoStreamServer, EchoStreamExceptionFilter } from ${JSON.stringify(path.join(DIST, 'index.js'))};
       console.log(typeof EchoStreamServer, typeof EchoStreamExceptionFilter);`,
      { esm: true },
    );
    expect(imported).toBe('function function');
  });
});
