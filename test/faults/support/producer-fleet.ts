/**
 * Producers as separate OS processes (`producer-process.mjs`, which loads the BUILT package from
 * `dist/`): each publishes idempotently and retries every failed publish under the same id; this
 * side reads what it says (`ACK`, `ERR`, `DONE`) and SIGKILLs it if a test forgets it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { processRegistry, type ExitCleanup } from '../../support/redis-server';

/** The child script, relative to the repository root. */
export const PRODUCER_SCRIPT = path.join('test', 'faults', 'support', 'producer-process.mjs');

/** What one producer process is told to do (see the script's header). */
export interface ProducerProcessOptions {
  redisUrl: string;
  stream: string;
  count: number;
  concurrency?: number;
  /** Ids per call: 1 uses `publish`, more `publishMany`. @default 1 */
  batch?: number;
  /** Ids per second to start at most. @default 0 (unpaced) */
  rate?: number;
  /** Module `publishTimeoutMs`. @default 400 */
  publishTimeoutMs?: number;
}

/** The answer of a publish of one id. */
export interface ProducerAck {
  entryId: string;
  /** Attempts it took (1: the first answered). */
  attempts: number;
  /** When the attempt that answered started (ms, this host's clock). */
  lastAttemptAt: number;
}

const REGISTRY_KEY = Symbol.for('nestjs-echo-stream.test.producer-fleet-registry');

function registry(): ExitCleanup {
  return processRegistry(REGISTRY_KEY, () => ({ pids: new Set(), dirs: new Set() }));
}

/** One producer process, started by the constructor; `done` resolves when it exits. */
export class ProducerProcess {
  /** Branded id -> its answer. */
  readonly acks = new Map<string, ProducerAck>();
  /** Failed attempts by what `written` said: false, unknown (reply lost) or true. */
  readonly failures = { false: 0, unknown: 0, true: 0 };
  /** Ids with at least one failed attempt. */
  readonly retriedIds = new Set<string>();
  readonly done: Promise<void>;
  finished = false;
  private readonly child: ChildProcess;
  private rest = '';
  private stderr = '';

  constructor(options: ProducerProcessOptions) {
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.NODE_OPTIONS; // jest's --experimental-vm-modules is not for the child
    Object.assign(env, {
      REDIS_URL: options.redisUrl,
      STREAM: options.stream,
      COUNT: String(options.count),
      CONCURRENCY: String(options.concurrency ?? 4),
      BATCH: String(options.batch ?? 1),
      RATE: String(options.rate ?? 0),
      PUBLISH_TIMEOUT_MS: String(options.publishTimeoutMs ?? 400),
    });
    this.child = spawn(process.execPath, [PRODUCER_SCRIPT], {
      cwd: process.cwd(),
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const pid = this.child.pid;
    if (pid !== undefined) registry().pids.add(pid);
    this.child.stdout!.setEncoding('utf8');
    this.child.stdout!.on('data', (chunk: string) => this.onStdout(chunk));
    this.child.stderr!.setEncoding('utf8');
    this.child.stderr!.on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-8000);
    });
    this.done = new Promise<void>((resolve, reject) => {
      this.child.once('exit', (code, signal) => {
        if (pid !== undefined) registry().pids.delete(pid);
        if (code === 0 && this.finished) resolve();
        else reject(new Error(`producer exited (${signal ?? `code ${code}`}):\n${this.stderr}`));
      });
    });
  }

  /** SIGKILLs the process if it still runs. */
  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }

  private onStdout(chunk: string): void {
    const lines = (this.rest + chunk).split('\n');
    this.rest = lines.pop() ?? '';
    for (const line of lines) {
      const [kind, id, a, b, c] = line.trim().split(' ');
      if (kind === 'ACK') {
        this.acks.set(id, { entryId: a, attempts: Number(b), lastAttemptAt: Number(c) });
      } else if (kind === 'ERR') {
        this.retriedIds.add(id);
        const written = a as keyof ProducerProcess['failures'];
        if (written in this.failures) this.failures[written]++;
      } else if (kind === 'DONE') {
        this.finished = true;
      }
    }
  }
}
