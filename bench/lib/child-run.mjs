// The runner's side of a child process (the contenders of bench/contenders/, the producer, the
// many-handlers child): fork it with its config in BENCH_CHILD, wait for its messages by type.
// The child's side is bench/lib/child.mjs.
import { fork } from 'node:child_process';
import { prioritize, readOptions } from './options.mjs';

export class ChildRun {
  /**
   * Forks `script` with `cfg` (JSON in BENCH_CHILD) at the run's nice value.
   * @param {string} script
   * @param {object} cfg
   * @param {string[]} [execArgv] node flags of this child (e.g. --cpu-prof)
   * @param {{ env: object, priority: number | null, nodeArgs: string[] }} [options] the run's
   *   options (readOptions(); by default read from process.env now)
   */
  constructor(script, cfg, execArgv = [], options = readOptions()) {
    this.inbox = [];
    this.waiters = [];
    this.stderr = '';
    this.exited = null;
    this.child = fork(script, [], {
      env: { ...options.env, BENCH_CHILD: JSON.stringify(cfg) },
      execArgv: ['--disable-warning=ExperimentalWarning', ...execArgv, ...options.nodeArgs],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    prioritize(this.child.pid, options.priority);
    this.child.stdout.on('data', () => undefined);
    this.child.stderr.on('data', (d) => (this.stderr = (this.stderr + d).slice(-4000)));
    this.child.on('message', (msg) => {
      this.inbox.push(msg);
      this.pump();
    });
    this.child.on('exit', (code, signal) => {
      this.exited = { code, signal };
      this.pump();
    });
  }

  pump() {
    for (const w of [...this.waiters]) {
      const i = this.inbox.findIndex((m) => m.type === w.type);
      if (i >= 0) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve(this.inbox.splice(i, 1)[0]);
      } else if (this.exited) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.reject(
          new Error(
            `child exited (${this.exited.code ?? this.exited.signal}) before '${w.type}': ${this.stderr.trim().split('\n').slice(-6).join(' | ')}`,
          ),
        );
      }
    }
  }

  /** Next message of `type`; rejects on exit or timeout (the child is then killed). */
  waitFor(type, timeoutMs) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.kill();
        reject(new Error(`timeout after ${timeoutMs} ms waiting for '${type}'`));
      }, timeoutMs);
      this.waiters.push({
        type,
        resolve: (m) => (clearTimeout(timer), resolve(m)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      });
      this.pump();
    });
  }

  send(msg) {
    if (!this.exited) this.child.send(msg);
  }

  kill() {
    if (!this.exited) this.child.kill('SIGKILL');
  }

  async exit() {
    if (this.exited) return this.exited;
    await new Promise((r) => this.child.once('exit', r));
    return this.exited;
  }
}
