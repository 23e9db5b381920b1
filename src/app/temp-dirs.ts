import { randomBytes } from 'node:crypto';
import { readFileSync, readlinkSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';

/**
 * Every process keeps its temporary files (task folders, voice samples, engine-thread scratch) in a
 * folder of its own under TMP_DIR, `proc-<pid>-<random>`, with an `owner.json` that says who owns it.
 * A process that dies without cleaning up (kill -9, OOM, power loss) leaves its folder behind; the next
 * process to start on the same TMP_DIR removes it, and every process sweeps again each minute.
 *
 * Several processes may share TMP_DIR (ROLE=api and ROLE=all on one DATA_DIR, workers on one machine,
 * even machines sharing a network disk), so a folder is removed only when its owner is certainly gone:
 * - same machine, same boot, same PID namespace: the owner's PID no longer runs, or runs a process that
 *   started at another time (a reused PID);
 * - anything else (another machine or container, a reboot in between): the owner stopped touching
 *   owner.json (every minute) STALE_MS ago;
 * - entries without an owner (left by older versions, or a process killed between mkdir and writing
 *   owner.json): when they have not changed for ORPHAN_MS.
 */
export const OWNER_FILE = 'owner.json';
export const PREFIX = 'proc-';
const HEARTBEAT_MS = 60_000;
const STALE_MS = 15 * 60_000;
const ORPHAN_MS = 24 * 3600_000;

export interface Owner {
  pid: number;
  host: string;
  /** Linux: the kernel's boot id and this process's PID namespace; null elsewhere. */
  bootId: string | null;
  pidNamespace: string | null;
  /** Linux: the process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat). */
  startTicks: string | null;
  startedAt: string;
}

function readOr<T>(read: () => T): T | null {
  try {
    return read();
  } catch {
    return null;
  }
}

function startTicks(pid: number): string | null {
  const stat = readOr(() => readFileSync(`/proc/${pid}/stat`, 'utf8'));
  if (stat === null) return null;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so count fields after the last ')'.
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
}

/** kill(pid, 0): ESRCH when no such process; EPERM when it exists but belongs to another user. */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The owner record of process `pid` of this machine and PID namespace (this process by default). */
export function ownerRecord(pid = process.pid): Owner {
  return {
    pid,
    host: hostname(),
    bootId: readOr(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()),
    pidNamespace: readOr(() => readlinkSync('/proc/self/ns/pid')),
    startTicks: startTicks(pid),
    startedAt: new Date().toISOString(),
  };
}

function isOwner(v: unknown): v is Owner {
  const o = v as Partial<Owner> | null;
  return typeof o === 'object' && o !== null && typeof o.pid === 'number' && typeof o.host === 'string';
}

export class ProcessTempDirs {
  private timer: NodeJS.Timeout | null = null;

  private constructor(
    private readonly root: string,
    /** This process's own folder: give it to everything that makes temporary files. */
    readonly dir: string,
    private readonly me: Owner,
    private readonly logger: Logger,
  ) {}

  /** Makes this process's folder under `root`, sweeps dead owners' folders, and keeps both up every minute. */
  static async claim(root: string, logger: Logger, opts: { heartbeatMs?: number } = {}): Promise<ProcessTempDirs> {
    const me = ownerRecord();
    const dir = join(root, `${PREFIX}${me.pid}-${randomBytes(4).toString('hex')}`);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, OWNER_FILE), `${JSON.stringify(me, null, 2)}\n`);
    const temp = new ProcessTempDirs(root, dir, me, logger);
    await temp.sweep();
    temp.timer = setInterval(() => void temp.tick(), opts.heartbeatMs ?? HEARTBEAT_MS).unref();
    return temp;
  }

  private async tick(): Promise<void> {
    const now = new Date();
    await utimes(join(this.dir, OWNER_FILE), now, now).catch((err: unknown) => this.logger.warn({ err, dir: this.dir }, 'could not refresh the temp folder owner file'));
    await this.sweep().catch((err: unknown) => this.logger.warn({ err }, 'temp folder sweep failed'));
  }

  /** Removes the folders of owners that are gone; returns their names. */
  async sweep(): Promise<string[]> {
    const removed: string[] = [];
    const names = await readdir(this.root).catch(() => [] as string[]);
    for (const name of names) {
      const path = join(this.root, name);
      if (path === this.dir) continue;
      if (!(await this.isAbandoned(path, name))) continue;
      await rm(path, { recursive: true, force: true, maxRetries: 2 });
      removed.push(name);
    }
    if (removed.length) this.logger.info({ removed, root: this.root }, 'removed temp folders of processes that are gone');
    return removed;
  }

  private async isAbandoned(path: string, name: string): Promise<boolean> {
    const now = Date.now();
    if (name.startsWith(PREFIX)) {
      const ownerFile = join(path, OWNER_FILE);
      const owner = await readFile(ownerFile, 'utf8').then((t) => JSON.parse(t) as unknown, () => null);
      if (isOwner(owner)) {
        if (this.canSeeProcessesOf(owner)) {
          const ticks = startTicks(owner.pid);
          if (ticks === null) return !processExists(owner.pid); // /proc may hide other users' processes (hidepid)
          return owner.startTicks !== null && ticks !== owner.startTicks; // the PID now belongs to another process
        }
        const touched = await stat(ownerFile).then((s) => s.mtimeMs, () => 0);
        return now - touched > STALE_MS;
      }
    }
    // No readable owner: an older version's task folder, or a process killed between mkdir and owner.json.
    const changed = await stat(path).then((s) => s.mtimeMs, () => now);
    return now - changed > ORPHAN_MS;
  }

  /** Whether PIDs in `owner` mean the same processes as here: same machine, boot and PID namespace (Linux). */
  private canSeeProcessesOf(owner: Owner): boolean {
    const me = this.me;
    return (
      me.bootId !== null &&
      me.pidNamespace !== null &&
      owner.host === me.host &&
      owner.bootId === me.bootId &&
      owner.pidNamespace === me.pidNamespace
    );
  }

  /**
   * How many other processes' folders are here whose owner may still run (by the same rules as the sweep): other
   * Soundry processes on this TMP_DIR, such as a ROLE=api node sharing DATA_DIR, which the DATA_DIR lock does not keep out.
   */
  async othersAlive(): Promise<number> {
    let alive = 0;
    for (const name of await readdir(this.root).catch(() => [] as string[])) {
      const path = join(this.root, name);
      if (name.startsWith(PREFIX) && path !== this.dir && !(await this.isAbandoned(path, name))) alive++;
    }
    return alive;
  }

  /** At a clean stop: nothing of this process's stays behind. */
  async release(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await rm(this.dir, { recursive: true, force: true, maxRetries: 2 });
  }
}
