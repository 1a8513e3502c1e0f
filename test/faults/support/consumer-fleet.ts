/**
 * Consumers as separate OS processes (`consumer-process.mjs`, which loads the BUILT package from
 * `dist/`): spawn, wait for READY, watch handler events, SIGKILL / SIGTERM, restart.
 *
 * Every child is tracked per OS process and SIGKILLed by an exit hook if a test forgets it;
 * `stopAllConsumerProcesses()` in afterAll is the normal way out.
 *
 * ESM-safe: no `__dirname`; the script path is relative to `process.cwd()` (the repository root,
 * where jest runs).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { StreamHandlerOptions } from '../../../lib/interfaces/stream-handler-options.interface';
import { processRegistry, type ExitCleanup } from '../../support/redis-server';

/** The child script, relative to the repository root. */
export const CONSUMER_SCRIPT = path.join('test', 'faults', 'support', 'consumer-process.mjs');

/**
 * Fails with a clear message when the package was not built, or was built before a file of lib/
 * last changed: the children load `dist/`, and would test the old code.
 */
export function assertBuilt(): void {
  const entry = path.join(process.cwd(), 'dist', 'index.js');
  if (!fs.existsSync(entry)) {
    throw new Error(
      `${entry} is missing: the fault suite runs consumers from the built package; run npm run build first`,
    );
  }
  const builtAt = fs.statSync(entry).mtimeMs;
  const newer = newestSource(path.join(process.cwd(), 'lib'));
  if (newer && newer.mtimeMs > builtAt) {
    throw new Error(
      `${newer.file} changed after the build in dist/: the fault suite runs consumers from the built package; run npm run build first`,
    );
  }
}

/** The file of `dir` (recursively) changed last. */
function newestSource(dir: string): { file: string; mtimeMs: number } | undefined {
  let newest: { file: string; mtimeMs: number } | undefined;
  for (const item of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!item.isFile()) continue;
    const file = path.join(item.parentPath, item.name);
    const { mtimeMs } = fs.statSync(file);
    if (!newest || mtimeMs > newest.mtimeMs) newest = { file, mtimeMs };
  }
  return newest;
}

/** What one consumer process is told to do. */
export interface ConsumerProcessOptions {
  redisUrl: string;
  stream: string;
  group: string;
  /** Stable across restarts: a restart drains this name's PEL. */
  name: string;
  /** The handled ledger (shared by every process of a test is fine: O_APPEND). */
  ledger: string;
  /** Handler time per entry. @default 0 */
  handleMs?: number;
  /** SIGKILL itself right after the N-th ledger write, before returning (no XACK). */
  crashAfter?: number;
  /** The handler fails attempts 1..N of every entry (an `F` ledger line each). @default 0 */
  failAttempts?: number;
  /** Handler options applied as module `defaults`. */
  defaults?: Partial<StreamHandlerOptions>;
  /** Module `shutdownTimeoutMs`. @default 5000 */
  shutdownTimeoutMs?: number;
  /** Another child script (same stdout protocol), relative to the root. @default CONSUMER_SCRIPT */
  script?: string;
  /** More environment for the child. */
  env?: Record<string, string>;
}

/** A handler event seen on the child's stdout. */
export interface HandlerEvent {
  kind: 'START' | 'DONE' | 'FAIL';
  id: string;
  entryId?: string;
  attempts?: number;
  at: number;
}

interface FleetRegistry extends ExitCleanup {
  live: Set<ConsumerProcess>;
}

const REGISTRY_KEY = Symbol.for('nestjs-echo-stream.test.consumer-fleet-registry');

function registry(): FleetRegistry {
  return processRegistry(REGISTRY_KEY, () => ({
    pids: new Set(),
    live: new Set(),
    dirs: new Set(),
  }));
}

/** A fresh temp dir for a test's ledgers; removed by `stopAllConsumerProcesses()`. */
export function makeWorkDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'echo-stream-faults-'));
  registry().dirs.add(dir);
  return dir;
}

/** One consumer process; `start()` may be called again after it exited (a restart). */
export class ConsumerProcess {
  readonly events: HandlerEvent[] = [];
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private stderr = '';
  private stdoutRest = '';
  private readyResolve: (() => void) | undefined;
  /** How many times this process was started. */
  starts = 0;
  /** When the current (last) run was spawned (its events are those from then on). */
  spawnedAt = 0;
  /** When the current (last) run printed READY. */
  readyAt = 0;
  /** Exit of the last run: signal name or code. */
  lastExit: string | undefined;

  constructor(readonly options: ConsumerProcessOptions) {}

  get name(): string {
    return this.options.name;
  }

  get pid(): number | undefined {
    return this.isRunning() ? this.child?.pid : undefined;
  }

  isRunning(): boolean {
    const c = this.child;
    return !!c && c.exitCode === null && c.signalCode === null;
  }

  /** The last few KB of the child's log output (Nest's error/warn lines), for failure messages. */
  get errors(): string {
    return this.stderr;
  }

  /** Spawns the child; resolves once it printed READY (its loop is running). */
  async start(readyTimeoutMs = 15_000): Promise<void> {
    if (this.isRunning()) throw new Error(`consumer ${this.name} is already running`);
    const o = this.options;
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.NODE_OPTIONS; // jest's --experimental-vm-modules is not for the child
    Object.assign(env, {
      REDIS_URL: o.redisUrl,
      STREAM: o.stream,
      GROUP: o.group,
      CONSUMER_NAME: o.name,
      LEDGER: o.ledger,
      HANDLE_MS: String(o.handleMs ?? 0),
      CRASH_AFTER: o.crashAfter ? String(o.crashAfter) : '',
      FAIL_ATTEMPTS: String(o.failAttempts ?? 0),
      DEFAULTS: JSON.stringify(o.defaults ?? {}),
      SHUTDOWN_TIMEOUT_MS: String(o.shutdownTimeoutMs ?? 5000),
      ...o.env,
    });
    const child = spawn(process.execPath, [o.script ?? CONSUMER_SCRIPT], {
      cwd: process.cwd(),
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    this.spawnedAt = Date.now();
    this.starts++;
    this.readyAt = 0;
    this.lastExit = undefined;
    this.stdoutRest = '';
    const pid = child.pid;
    if (pid !== undefined) registry().pids.add(pid);
    registry().live.add(this);
    const ready = new Promise<void>((resolve) => (this.readyResolve = resolve));
    this.exited = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        this.lastExit = signal ?? `code ${code}`;
        if (pid !== undefined) registry().pids.delete(pid);
        registry().live.delete(this);
        resolve();
      });
      child.once('error', (err) => {
        this.lastExit = `spawn error: ${err.message}`;
        resolve();
      });
    });
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => this.onStdout(chunk));
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-8000);
    });
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      ready.then(() => 'ready' as const),
      this.exited.then(() => 'exited' as const),
      new Promise<'timeout'>(
        (resolve) => (timer = setTimeout(() => resolve('timeout'), readyTimeoutMs)),
      ),
    ]);
    clearTimeout(timer);
    if (outcome !== 'ready') {
      if (outcome === 'timeout') await this.kill('SIGKILL');
      throw new Error(
        `consumer ${this.name} did not get READY (${outcome}, exit ${this.lastExit ?? '-'}):\n${this.stderr}`,
      );
    }
  }

  /** Sends `signal` and waits for the exit. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (!this.isRunning()) return;
    this.child!.kill(signal);
    await this.exited;
  }

  /** Resolves when the current run exits (returns at once if it is not running). */
  waitExit(): Promise<void> {
    return this.exited;
  }

  /** Handler calls of the current run in progress now (started, neither done nor failed). */
  inHand(): number {
    const open = new Map<string, number>();
    for (const e of this.events) {
      if (e.at < this.spawnedAt) continue;
      open.set(e.id, (open.get(e.id) ?? 0) + (e.kind === 'START' ? 1 : -1));
    }
    let count = 0;
    for (const n of open.values()) if (n > 0) count++;
    return count;
  }

  /** Handler events of one kind (optionally for one id). */
  seen(kind: HandlerEvent['kind'], id?: string): HandlerEvent[] {
    return this.events.filter((e) => e.kind === kind && (id === undefined || e.id === id));
  }

  private onStdout(chunk: string): void {
    const text = this.stdoutRest + chunk;
    const lines = text.split('\n');
    this.stdoutRest = lines.pop() ?? '';
    const at = Date.now();
    for (const line of lines) {
      const [kind, id, entryId, attempts] = line.trim().split(' ');
      if (kind === 'READY') {
        this.readyAt = at;
        this.readyResolve?.();
      } else if (kind === 'START' || kind === 'FAIL') {
        this.events.push({ kind, id, entryId, attempts: Number(attempts), at });
      } else if (kind === 'DONE') {
        this.events.push({ kind, id, at });
      } else if (line.trim()) {
        this.stderr = (this.stderr + line + '\n').slice(-8000); // Nest's warn lines go to stdout
      }
    }
  }
}

/** SIGKILLs every consumer process still running and removes the work dirs. */
export async function stopAllConsumerProcesses(): Promise<void> {
  const reg = registry();
  await Promise.all([...reg.live].map((p) => p.kill('SIGKILL')));
  for (const dir of reg.dirs) fs.rmSync(dir, { recursive: true, force: true });
  reg.dirs.clear();
}
