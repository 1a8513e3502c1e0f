/**
 * What the chaos runs share: a seeded PRNG (a failing run replays with its seed) and a supervisor
 * that SIGKILLs consumer processes and starts them again, recording every kill.
 */
import type { ConsumerProcess } from './consumer-fleet';

/** mulberry32: a small seeded PRNG, so a failing run can be replayed with CHAOS_SEED. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One SIGKILL: the process id it hit and when (ms, this host's clock, before the signal). */
export interface KillRecord {
  pid: number;
  at: number;
}

/** Restarts consumers at random; a kill may land while a process is still starting. */
export class Supervisor {
  kills = 0;
  killedWhileStarting = 0;
  /** Every SIGKILL of a running process, in order. */
  readonly killed: KillRecord[] = [];
  private readonly starting = new Map<ConsumerProcess, Promise<void>>();

  constructor(private readonly procs: ConsumerProcess[]) {}

  /** Starts `proc` in the background (a kill before READY is part of the chaos). */
  launch(proc: ConsumerProcess): void {
    const previous = this.starting.get(proc) ?? Promise.resolve();
    this.starting.set(
      proc,
      previous.then(() =>
        proc.start(30_000).catch(() => {
          if (!proc.isRunning()) this.killedWhileStarting++;
        }),
      ),
    );
  }

  async killAndRestart(proc: ConsumerProcess): Promise<void> {
    const pid = proc.pid;
    if (pid !== undefined) this.killed.push({ pid, at: Date.now() });
    await proc.kill('SIGKILL');
    this.kills++;
    this.launch(proc);
  }

  /** Waits for every pending start; starts (and waits for) any process that is not running. */
  async heal(): Promise<void> {
    await Promise.all(this.starting.values());
    await Promise.all(this.procs.filter((p) => !p.isRunning()).map((p) => p.start(30_000)));
  }
}
