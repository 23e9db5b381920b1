import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { OWNER_FILE, ownerRecord, PREFIX, ProcessTempDirs, type Owner } from '../../src/app/temp-dirs.js';

const logger = pino({ level: 'silent' });
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function root(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'soundry-tempdirs-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A folder as another process would have left it, with a task folder and a file inside. */
async function folder(rootDir: string, name: string, owner: Owner | null, ageMs = 0): Promise<string> {
  const dir = join(rootDir, name);
  await mkdir(join(dir, 'task-abc'), { recursive: true });
  await writeFile(join(dir, 'task-abc', 'output.wav'), Buffer.alloc(1024));
  if (owner) await writeFile(join(dir, OWNER_FILE), JSON.stringify(owner));
  if (ageMs) {
    const then = new Date(Date.now() - ageMs);
    if (owner) await utimes(join(dir, OWNER_FILE), then, then);
    await utimes(dir, then, then);
  }
  return dir;
}

function sleeper(): ChildProcess {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  cleanups.push(async () => child.kill('SIGKILL'));
  return child;
}

async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((r) => child.once('exit', r));
  return child.pid!;
}

const linux = process.platform === 'linux';

describe('per-process temp folders', () => {
  it('each process gets its own folder with an owner file; release removes it', async () => {
    const r = await root();
    const a = await ProcessTempDirs.claim(r, logger);
    const b = await ProcessTempDirs.claim(r, logger);
    expect(a.dir).not.toBe(b.dir);
    expect((await readdir(r)).sort()).toEqual([a.dir, b.dir].map((d) => d.slice(r.length + 1)).sort());
    expect(existsSync(join(a.dir, OWNER_FILE))).toBe(true);
    await b.sweep();
    expect(existsSync(a.dir)).toBe(true); // a live owner (this very process) is never swept
    await a.release();
    await b.release();
    expect(await readdir(r)).toEqual([]);
  });

  it.skipIf(!linux)('sweeps the folders of dead owners on this machine at once, and keeps live ones (Linux: /proc)', async () => {
    const r = await root();
    const live = sleeper();
    await new Promise((res) => live.once('spawn', res));
    const dead = await deadPid();
    const liveDir = await folder(r, `${PREFIX}${live.pid}-aaaa`, ownerRecord(live.pid!));
    const deadDir = await folder(r, `${PREFIX}${dead}-bbbb`, { ...ownerRecord(dead), startTicks: '12345' });
    // The PID runs, but it is another process than the one that wrote the owner file (PID reused).
    const reusedDir = await folder(r, `${PREFIX}${live.pid}-cccc`, { ...ownerRecord(live.pid!), startTicks: '1' });
    const temp = await ProcessTempDirs.claim(r, logger);
    cleanups.push(() => temp.release());
    expect(existsSync(liveDir)).toBe(true);
    expect(existsSync(deadDir)).toBe(false);
    expect(existsSync(reusedDir)).toBe(false);
  });

  it('another machine or container: swept only once its owner stopped refreshing the owner file for 15 minutes', async () => {
    const r = await root();
    const elsewhere: Owner = { ...ownerRecord(), host: 'other-host', pid: 1 };
    const fresh = await folder(r, `${PREFIX}1-dddd`, elsewhere, 60_000);
    const stale = await folder(r, `${PREFIX}1-eeee`, elsewhere, 16 * 60_000);
    const temp = await ProcessTempDirs.claim(r, logger);
    cleanups.push(() => temp.release());
    expect(existsSync(fresh)).toBe(true);
    expect(existsSync(stale)).toBe(false);
  });

  it('entries without an owner (older versions, a crash before owner.json) go after a day without change', async () => {
    const r = await root();
    const recent = await folder(r, 'f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0-Ab12Cd', null, 3600_000);
    const old = await folder(r, 'e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1-Zz99Yy', null, 25 * 3600_000);
    const ownerless = await folder(r, `${PREFIX}999-ffff`, null, 25 * 3600_000);
    const temp = await ProcessTempDirs.claim(r, logger);
    cleanups.push(() => temp.release());
    expect(existsSync(recent)).toBe(true);
    expect(existsSync(old)).toBe(false);
    expect(existsSync(ownerless)).toBe(false);
  });
});
