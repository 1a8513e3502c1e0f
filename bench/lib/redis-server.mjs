// A throw-away redis-server for one bench run: its own free loopback port, no persistence,
// stopped (by its own pid) when the run ends, also on Ctrl-C.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { serverCommand } from '../../scripts/lib/echo-server.mjs';

/**
 * The server to run, as `{ command, args }` (args go before the server's own): the build `name`
 * names, else the one `ECHO_SERVER` names (scripts/lib/echo-server.mjs), default the
 * `redis-server` on PATH or `REDIS_SERVER_BIN`.
 */
export function redisCommand(name) {
  const chosen = serverCommand(name);
  if (!chosen.available) throw new Error(chosen.reason);
  return chosen;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts a throw-away server of the build `name` (default: `ECHO_SERVER`, see redisCommand) and
 * answers `{ url, pid, admin, stop }` once it answers.
 */
export async function startRedis(name) {
  const { command, args: prefix } = redisCommand(name);
  try {
    execFileSync(command, [...prefix, '--version'], { stdio: 'ignore' });
  } catch {
    throw new Error(
      `${command} not found: install redis-server (apt-get install -y redis-server) or set REDIS_SERVER_BIN`,
    );
  }
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'echo-bench-redis-'));
    const proc = spawn(
      command,
      [
        ...prefix,
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        '--daemonize',
        'no',
        '--loglevel',
        'warning',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let exited = false;
    proc.on('exit', () => (exited = true));
    const url = `redis://127.0.0.1:${port}`;
    const admin = new Redis(url, {
      lazyConnect: true,
      maxRetriesPerRequest: 1,
      retryStrategy: () => null,
    });
    admin.on('error', () => undefined);
    const deadline = Date.now() + 10_000;
    let up = false;
    while (!exited && Date.now() < deadline) {
      try {
        if (admin.status !== 'ready') await admin.connect();
        if ((await admin.ping()) === 'PONG') {
          up = true;
          break;
        }
      } catch {
        admin.disconnect();
        await sleep(50);
      }
    }
    if (!up) {
      admin.disconnect();
      if (!exited) proc.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      continue; // a port race: try another port
    }
    const stopHook = () => {
      if (!exited) proc.kill('SIGKILL');
    };
    process.on('exit', stopHook);
    return {
      url,
      port,
      pid: proc.pid,
      admin,
      async stop() {
        admin.disconnect();
        if (!exited) {
          proc.kill('SIGTERM');
          const until = Date.now() + 3000;
          while (!exited && Date.now() < until) await sleep(25);
          if (!exited) proc.kill('SIGKILL');
        }
        process.off('exit', stopHook);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  throw new Error('could not start redis-server');
}

/** INFO commandstats -> { command: calls }. */
export async function commandStats(admin) {
  const text = await admin.info('commandstats');
  const out = {};
  for (const line of text.split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

export function sumCalls(stats, exclude = []) {
  let total = 0;
  for (const [cmd, calls] of Object.entries(stats)) if (!exclude.includes(cmd)) total += calls;
  return total;
}

// ---------------------------------------------------------------------------------------------
// How busy the machine was with OTHER processes during a measurement (Linux /proc; null elsewhere)
// ---------------------------------------------------------------------------------------------

let hz = null;
function clockTicks() {
  if (hz === null) {
    try {
      hz = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      hz = 100;
    }
  }
  return hz;
}

function machineBusySeconds() {
  const line = readFileSync('/proc/stat', 'utf8')
    .split('\n')[0]
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  // user nice system idle iowait irq softirq steal
  const busy = line[0] + line[1] + line[2] + line[5] + line[6] + line[7];
  return busy / clockTicks();
}

/** CPU seconds (user + system) process `pid` used so far (Linux: /proc). */
export function pidCpuSeconds(pid) {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / clockTicks();
}

/**
 * Starts a window; `end(ownChildSeconds)` returns the share of the machine's CPU capacity that
 * processes other than the runner, redis-server and the measured children used.
 */
export function foreignCpuWindow(redisPid) {
  try {
    const t0 = process.hrtime.bigint();
    const busy0 = machineBusySeconds();
    const redis0 = pidCpuSeconds(redisPid);
    const self0 = process.cpuUsage();
    return {
      end(childSeconds) {
        try {
          const wall = Number(process.hrtime.bigint() - t0) / 1e9;
          const busy = machineBusySeconds() - busy0;
          const redis = pidCpuSeconds(redisPid) - redis0;
          const selfCpu = process.cpuUsage(self0);
          const ours = redis + (selfCpu.user + selfCpu.system) / 1e6 + childSeconds;
          return Math.max(0, (busy - ours) / (wall * cpus().length));
        } catch {
          return null;
        }
      },
    };
  } catch {
    return { end: () => null };
  }
}
