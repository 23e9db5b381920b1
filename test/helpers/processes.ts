import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The repository root, where `src/main.ts` is started from. */
export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Polls `fn` until it returns something truthy (errors count as "not yet"), or fails naming what it waited for. */
export async function until<T>(what: string, fn: () => Promise<T | undefined | null | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch {
      /* not yet */
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Resolves with the exit code once the child is gone; a process killed by a signal has exitCode null and signalCode set. */
export const exited = (child: ChildProcess) =>
  new Promise<number | null>((r) => (child.exitCode !== null || child.signalCode !== null ? r(child.exitCode) : child.once('exit', (code) => r(code))));

/**
 * Soundry servers as real child processes (`node --import tsx src/main.ts`), remembered so that a test's
 * afterAll can SIGKILL whatever is still running, whatever happened. A non-zero exit prints the last stderr.
 */
export class ServerProcesses {
  private readonly children: ChildProcess[] = [];

  /** A server process with the given stdio, tracked for cleanup (LOG_LEVEL warn unless env says otherwise). */
  spawn(env: Record<string, string>, stdio: StdioOptions = ['ignore', 'ignore', 'pipe'], nodeFlags: readonly string[] = []): ChildProcess {
    const child = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', 'src/main.ts'], {
      cwd: REPO_ROOT,
      env: { ...process.env, LOG_LEVEL: 'warn', ...env },
      stdio,
    });
    this.children.push(child);
    return child;
  }

  /** A server whose non-zero exit prints its last stderr (so a crash at start-up explains itself); `nodeFlags` go before `--import tsx`. */
  start(env: Record<string, string>, nodeFlags: readonly string[] = []): ChildProcess {
    const child = this.spawn(env, undefined, nodeFlags);
    let stderr = '';
    child.stderr?.on('data', (d) => (stderr = (stderr + String(d)).slice(-4000)));
    child.on('exit', (code, signal) => {
      if (code && code !== 0) console.error(`server exited ${code} ${signal}: ${stderr}`);
    });
    return child;
  }

  all(): readonly ChildProcess[] {
    return this.children;
  }

  signalAll(signal: NodeJS.Signals): void {
    for (const c of this.children) if (c.exitCode === null && c.signalCode === null) c.kill(signal);
  }

  killAll(): void {
    this.signalAll('SIGKILL');
  }
}
