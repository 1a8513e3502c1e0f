/**
 * Real `redis-server` processes for e2e and fault tests.
 *
 * Every server gets its own temp dir (under `os.tmpdir()`) and, unless a port is given, a free
 * loopback port. Servers are tracked per process: `stopAllRedisServers()` stops all of them, and an
 * exit hook on the host process SIGKILLs any that are still alive when the process ends.
 *
 * Always stop what you start, AFTER closing the app that uses it:
 *   afterAll(async () => { await app.close(); await stopAllRedisServers(); });
 * The exit hook kills leftover processes, but a client left connected (yours or a leftover
 * tracked one) keeps Jest from exiting; `--detectOpenHandles` points at it.
 *
 * ESM-safe: no `__dirname`, no `require`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vm from 'node:vm';
import { Redis, type RedisOptions } from 'ioredis';
import { serverCommand, type ServerCommand } from '../../scripts/lib/echo-server.mjs';

/** Options for {@link RedisServer.start}. */
export interface RedisServerOptions {
  /** Persist with an AOF (`--appendonly yes`). @default false (no persistence at all) */
  appendonly?: boolean;
  /** fsync policy of the AOF (only with `appendonly`). @default 'always' */
  appendfsync?: 'always' | 'everysec';
  /** `--requirepass`; `url` and `client()` then authenticate. */
  password?: string;
  /**
   * Start as a replica of this server (`--replicaof`, and `--masterauth` with its password).
   * `start()` resolves once the server answers, before the first sync: see `waitReplicas()`.
   */
  replicaOf?: RedisServer;
  /** Appended last (so they override the defaults), e.g. `['--maxmemory', '2mb']`. */
  extraArgs?: string[];
  /** Fixed port. @default a free loopback port (retried on a port race) */
  port?: number;
  /** How long `start()` / `restart()` wait for PING to answer. @default 10000 */
  startTimeoutMs?: number;
}

const HOST = '127.0.0.1' as const;
const STOP_GRACE_MS = 3000;
const DEFAULT_START_TIMEOUT_MS = 10000;
const PORT_RACE_RETRIES = 5;

/**
 * What to run: the build `ECHO_SERVER` names (scripts/lib/echo-server.mjs; default the
 * `redis-server` on PATH, or `REDIS_SERVER_BIN`), as a command and the arguments that go before
 * the server's own.
 */
export function redisServerCommand(): ServerCommand {
  return serverCommand();
}

// ---------------------------------------------------------------------------------------------
// Process-wide registry and exit safety net
// ---------------------------------------------------------------------------------------------

/** What the exit hook of a {@link processRegistry} cleans up. */
export interface ExitCleanup {
  /** Live child pids, SIGKILLed by the exit hook. */
  pids: Set<number>;
  /** Temp dirs not removed yet, removed by the exit hook. */
  dirs: Set<string>;
}

interface HarnessRegistry extends ExitCleanup {
  /** Every server started and not yet stopped (all test files of this process). */
  servers: Set<RedisServer>;
}

/**
 * NOTE: Jest runs each test file in a vm sandbox whose `process` is a copy with its own event
 * listeners: an `exit` listener on it never fires. `vm.runInThisContext` evaluates in the host
 * realm, which hands back the real `process`. Outside Jest both are the same object.
 */
function hostProcess(): NodeJS.Process {
  try {
    const real = vm.runInThisContext('process') as NodeJS.Process | undefined;
    if (real && typeof real.on === 'function') return real;
  } catch {
    // fall through
  }
  return process;
}

/**
 * One registry per OS process, kept on the host `process` under `key` and shared by every test
 * file (Symbol.for crosses vm realms); `create` makes it on first use. An exit hook on the host
 * process SIGKILLs its pids and removes its dirs.
 */
export function processRegistry<T extends ExitCleanup>(key: symbol, create: () => T): T {
  const host = hostProcess() as NodeJS.Process & Record<symbol, T | undefined>;
  let reg = host[key];
  if (!reg) {
    const created = create();
    reg = created;
    host[key] = created;
    host.on('exit', () => {
      for (const pid of created.pids) {
        try {
          host.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      created.pids.clear();
      for (const dir of created.dirs) {
        try {
          fs.rmSync(dir, { recursive: true, force: true });
        } catch {
          // best effort
        }
      }
      created.dirs.clear();
    });
  }
  return reg;
}

const REGISTRY_KEY = Symbol.for('nestjs-echo-stream.test.redis-server-registry');

function registry(): HarnessRegistry {
  return processRegistry(REGISTRY_KEY, () => ({
    servers: new Set(),
    pids: new Set(),
    dirs: new Set(),
  }));
}

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

/** True when the chosen server (`ECHO_SERVER`, default `redis-server` on PATH) can be executed. */
export function redisServerAvailable(): boolean {
  const chosen = redisServerCommand();
  if (!chosen.available) return false;
  const bin = chosen.command;
  const candidates = bin.includes(path.sep)
    ? [bin]
    : (process.env.PATH ?? '')
        .split(path.delimiter)
        .filter(Boolean)
        .map((d) => path.join(d, bin));
  return candidates.some((file) => {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return fs.statSync(file).isFile();
    } catch {
      return false;
    }
  });
}

/** A port that was free a moment ago (bind 127.0.0.1:0, read it, close). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, HOST, () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => (port ? resolve(port) : reject(new Error('could not read a free port'))));
    });
  });
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function encodeCommand(args: string[]): string {
  let out = `*${args.length}\r\n`;
  for (const a of args) out += `$${Buffer.byteLength(a)}\r\n${a}\r\n`;
  return out;
}

type Reply = { ok: boolean; text: string };

/** Parses `count` simple/error/bulk replies from `buf`; null when more bytes are needed. */
function parseReplies(buf: Buffer, count: number): Reply[] | null {
  const replies: Reply[] = [];
  let pos = 0;
  while (replies.length < count) {
    const eol = buf.indexOf('\r\n', pos);
    if (eol < 0) return null;
    const type = String.fromCharCode(buf[pos]);
    const line = buf.toString('utf8', pos + 1, eol);
    if (type === '+' || type === ':') {
      replies.push({ ok: true, text: line });
      pos = eol + 2;
    } else if (type === '-') {
      replies.push({ ok: false, text: line });
      pos = eol + 2;
    } else if (type === '$') {
      const len = Number(line);
      if (len < 0) {
        replies.push({ ok: true, text: '' });
        pos = eol + 2;
        continue;
      }
      if (buf.length < eol + 2 + len + 2) return null;
      replies.push({ ok: true, text: buf.toString('utf8', eol + 2, eol + 2 + len) });
      pos = eol + 2 + len + 2;
    } else {
      replies.push({ ok: false, text: `unexpected reply type ${JSON.stringify(type)}` });
      return replies.concat(
        Array.from({ length: count - replies.length }, () => ({ ok: false, text: '' })),
      );
    }
  }
  return replies;
}

type ProbeResult = { ready: true; pid: number } | { ready: false; reason: string };

/**
 * One readiness probe over a raw socket: [AUTH], PING, INFO server. Ready when PING answers
 * +PONG (not -LOADING) and INFO reports the expected `process_id`, so a server that lost a
 * port race is never mistaken for someone else's server on that port.
 */
function probe(port: number, password: string | undefined, timeoutMs = 1000): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const cmds: string[][] = [];
    if (password !== undefined) cmds.push(['AUTH', password]);
    cmds.push(['PING'], ['INFO', 'server']);
    let buf = Buffer.alloc(0);
    let done = false;
    const sock = net.connect({ host: HOST, port });
    const finish = (r: ProbeResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => finish({ ready: false, reason: 'probe timed out' }), timeoutMs);
    sock.on('connect', () => sock.write(cmds.map(encodeCommand).join('')));
    sock.on('error', (err) => finish({ ready: false, reason: err.message }));
    sock.on('close', () => finish({ ready: false, reason: 'connection closed' }));
    sock.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const replies = parseReplies(buf, cmds.length);
      if (!replies) return;
      const failed = replies.find((r) => !r.ok);
      if (failed) return finish({ ready: false, reason: failed.text });
      const ping = replies[replies.length - 2];
      if (ping.text !== 'PONG') return finish({ ready: false, reason: `PING -> ${ping.text}` });
      const m = /process_id:(\d+)/.exec(replies[replies.length - 1].text);
      finish(m ? { ready: true, pid: Number(m[1]) } : { ready: false, reason: 'no process_id' });
    });
  });
}

class PortInUseError extends Error {}

// ---------------------------------------------------------------------------------------------
// RedisServer
// ---------------------------------------------------------------------------------------------

/** A `redis-server` child process on 127.0.0.1 with its own temp dir. */
export class RedisServer {
  readonly host = HOST;
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private paused = false;
  private removed = false;
  private readonly clients = new Set<Redis>();

  private constructor(
    private _port: number,
    readonly dir: string,
    private readonly opts: RedisServerOptions,
  ) {}

  /** The TCP port (fixed for the server's lifetime, restarts included). */
  get port(): number {
    return this._port;
  }

  /** `redis://127.0.0.1:<port>`, or `redis://:<password>@127.0.0.1:<port>` with a password. */
  get url(): string {
    const auth =
      this.opts.password !== undefined ? `:${encodeURIComponent(this.opts.password)}@` : '';
    return `redis://${auth}${HOST}:${this._port}`;
  }

  /** The pid of the running child, if any. */
  get pid(): number | undefined {
    return this.isRunning() ? this.child?.pid : undefined;
  }

  /** Path of the server's log file (`<dir>/redis.log`). */
  get logFile(): string {
    return path.join(this.dir, 'redis.log');
  }

  /** Spawns a server and resolves once it answers PING (not LOADING). */
  static async start(opts: RedisServerOptions = {}): Promise<RedisServer> {
    if (!redisServerAvailable()) {
      const chosen = redisServerCommand();
      throw new Error(
        chosen.reason ??
          "redis-server not found: install it with 'apt-get install -y redis-server' (Debian/Ubuntu) and run the tests again",
      );
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'echo-stream-redis-'));
    const portFixed = opts.port !== undefined;
    const server = new RedisServer(opts.port ?? 0, dir, { ...opts });
    registry().servers.add(server);
    registry().dirs.add(dir);
    try {
      for (let attempt = 1; ; attempt++) {
        if (!portFixed) server._port = await freePort();
        try {
          await server.spawnAndWait();
          return server;
        } catch (err) {
          if (err instanceof PortInUseError && !portFixed && attempt < PORT_RACE_RETRIES) continue;
          throw err;
        }
      }
    } catch (err) {
      await server.stop().catch(() => undefined);
      throw err;
    }
  }

  /** True while the child process is alive (paused counts as running). */
  isRunning(): boolean {
    const c = this.child;
    return !!c && c.exitCode === null && c.signalCode === null;
  }

  /**
   * A new ioredis client to this server (password included). It gets a no-op `error` listener
   * (commands still reject; fault tests would otherwise flood the console) and is disconnected
   * by `stop()`.
   */
  client(overrides: RedisOptions = {}): Redis {
    const c = new Redis({
      host: HOST,
      port: this._port,
      password: this.opts.password,
      ...overrides,
    });
    c.on('error', () => undefined);
    this.clients.add(c);
    c.once('end', () => this.clients.delete(c));
    return c;
  }

  /**
   * Waits until this server (a master) has `count` replicas online (initial sync done;
   * INFO replication), e.g. after starting them with `replicaOf`.
   */
  async waitReplicas(count: number, timeoutMs = 10_000): Promise<void> {
    const conn = this.client({ maxRetriesPerRequest: 0 });
    try {
      const started = Date.now();
      for (;;) {
        const info = await conn.info('replication');
        // online: the initial sync is done and the replica streams the master's writes
        const online = [...info.matchAll(/^slave\d+:.*state=online/gm)];
        if (online.length >= count) return;
        if (Date.now() - started > timeoutMs) {
          throw new Error(
            `${count} replica(s) of port ${this._port} not online within ${timeoutMs} ms:\n${info}`,
          );
        }
        await delay(25);
      }
    } finally {
      conn.disconnect();
    }
  }

  /** Sends `signal` (default SIGKILL) and waits for the process to exit. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const c = this.child;
    if (!c || !this.isRunning()) return;
    c.ref();
    try {
      c.kill(signal);
      // A stopped process only acts on SIGKILL; let it see any other signal.
      if (this.paused && signal !== 'SIGKILL') c.kill('SIGCONT');
      this.paused = false;
      await this.exited;
    } finally {
      c.unref();
    }
  }

  /**
   * Starts the server again on the SAME port and dir (so an AOF is reloaded) and waits until it
   * is ready. If it is still running it is first shut down with SIGTERM.
   */
  async restart(): Promise<void> {
    if (this.removed) throw new Error('RedisServer.restart(): the server was stopped');
    if (this.isRunning()) await this.stopProcess();
    // The port may be briefly taken by someone else; a fixed-port restart retries a few times.
    const deadline = Date.now() + (this.opts.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS);
    for (;;) {
      try {
        await this.spawnAndWait();
        return;
      } catch (err) {
        if (err instanceof PortInUseError && Date.now() < deadline) {
          await delay(100);
          continue;
        }
        throw err;
      }
    }
  }

  /** SIGSTOP: the server keeps its sockets open but answers nothing (a hung server). */
  pause(): void {
    if (!this.isRunning() || this.paused) return;
    this.child!.kill('SIGSTOP');
    this.paused = true;
  }

  /** SIGCONT after `pause()`. */
  resume(): void {
    if (!this.isRunning() || !this.paused) return;
    this.child!.kill('SIGCONT');
    this.paused = false;
  }

  /**
   * Disconnects tracked clients, SIGTERM (SIGKILL after 3 s), waits for exit, removes the dir.
   * Idempotent.
   */
  async stop(): Promise<void> {
    for (const c of this.clients) c.disconnect();
    this.clients.clear();
    await this.stopProcess();
    if (!this.removed) {
      this.removed = true;
      fs.rmSync(this.dir, { recursive: true, force: true });
      registry().dirs.delete(this.dir);
    }
    registry().servers.delete(this);
  }

  /** The server's log (for failure messages). */
  readLog(): string {
    try {
      return fs.readFileSync(this.logFile, 'utf8');
    } catch {
      return '';
    }
  }

  private async stopProcess(): Promise<void> {
    const c = this.child;
    if (!c || !this.isRunning()) return;
    c.ref();
    try {
      const timer = setTimeout(() => {
        if (this.isRunning()) c.kill('SIGKILL');
      }, STOP_GRACE_MS);
      try {
        c.kill('SIGTERM');
        if (this.paused) c.kill('SIGCONT');
        this.paused = false;
        await this.exited;
      } finally {
        clearTimeout(timer);
      }
    } finally {
      c.unref();
    }
  }

  private args(): string[] {
    const o = this.opts;
    const args = [
      '--bind',
      HOST,
      '--port',
      String(this._port),
      '--dir',
      this.dir,
      '--daemonize',
      'no',
      '--logfile',
      this.logFile,
      // RDB snapshots off in every mode: durability comes from the AOF alone, when enabled.
      '--save',
      '',
    ];
    if (o.appendonly) {
      args.push('--appendonly', 'yes', '--appendfsync', o.appendfsync ?? 'always');
    } else {
      args.push('--appendonly', 'no');
    }
    if (o.password !== undefined) args.push('--requirepass', o.password);
    if (o.replicaOf) {
      args.push('--replicaof', o.replicaOf.host, String(o.replicaOf.port));
      if (o.replicaOf.opts.password !== undefined) {
        args.push('--masterauth', o.replicaOf.opts.password);
      }
    }
    args.push(...(o.extraArgs ?? []));
    return args;
  }

  /** Spawns the child with the current port and waits for readiness or an early exit. */
  private async spawnAndWait(): Promise<void> {
    const stderrPath = path.join(this.dir, 'stderr.log');
    const logStart = fs.existsSync(this.logFile) ? fs.statSync(this.logFile).size : 0;
    const errFd = fs.openSync(stderrPath, 'w');
    let child: ChildProcess;
    try {
      const chosen = redisServerCommand();
      child = spawn(chosen.command, [...chosen.args, ...this.args()], {
        cwd: this.dir,
        stdio: ['ignore', errFd, errFd],
        detached: false,
      });
    } finally {
      fs.closeSync(errFd);
    }
    this.child = child;
    this.paused = false;
    let exitInfo: string | undefined;
    this.exited = new Promise<void>((resolve) => {
      const done = (code: number | null, sig: NodeJS.Signals | null) => {
        exitInfo ??= sig ? `signal ${sig}` : `code ${code}`;
        if (child.pid !== undefined) registry().pids.delete(child.pid);
        resolve();
      };
      child.once('exit', done);
      child.once('error', (err) => {
        exitInfo = `spawn error: ${err.message}`;
        // 'exit' may never follow a spawn error.
        done(null, null);
      });
    });
    if (child.pid !== undefined) registry().pids.add(child.pid);
    child.unref();

    const timeoutMs = this.opts.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    const deadline = Date.now() + timeoutMs;
    let lastReason = 'not probed yet';
    for (;;) {
      if (exitInfo !== undefined || !this.isRunning()) {
        await this.exited;
        const log = this.logSince(logStart) + readText(stderrPath);
        if (/address already in use/i.test(log)) {
          throw new PortInUseError(`redis-server: port ${this._port} is already in use`);
        }
        throw new Error(
          `redis-server exited during start (${exitInfo ?? 'unknown'}), port ${this._port}, ` +
            `dir ${this.dir}\n${tail(log)}`,
        );
      }
      const r = await probe(this._port, this.opts.password);
      if (r.ready && r.pid === child.pid) return;
      lastReason = r.ready
        ? `port ${this._port} answered by another redis (pid ${r.pid})`
        : r.reason;
      if (Date.now() > deadline) {
        await this.kill('SIGKILL');
        throw new Error(
          `redis-server did not become ready within ${timeoutMs} ms on port ${this._port} ` +
            `(last: ${lastReason})\n${tail(this.logSince(logStart))}`,
        );
      }
      await delay(20);
    }
  }

  private logSince(offset: number): string {
    return this.readLog().slice(offset);
  }
}

function readText(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function tail(text: string, lines = 20): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/** Stops every server started in this process (all test files) that is not stopped yet. */
export async function stopAllRedisServers(): Promise<void> {
  const servers = [...registry().servers];
  await Promise.all(servers.map((s) => s.stop()));
}

/** Calls of `command` (`xack`, `client|unblock`) the server served since it started (INFO commandstats). */
export async function commandCalls(redis: Redis, command: string): Promise<number> {
  const info = await redis.info('commandstats');
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
}
