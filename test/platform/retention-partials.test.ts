import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ownerRecord } from '../../src/app/temp-dirs.js';
import { partialUploadAgeMs } from '../../src/services/retention.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { TEST_PROFILE } from '../helpers/profile.js';

/**
 * Found from outside: an upload cut by kill -9, the server restarted at once (systemd), left its partial file
 * (`files/uploads/<id>/.<name>.part-<hex>`, up to UPLOAD_MAX_BYTES) for the whole TASK_TTL_SECONDS: start-up removed
 * only partials over an hour old, and the periodic sweep never looked for them. Local disk only (S3 keeps no partials).
 */
const HOUR = 3600_000;

/** A partial file as putStream leaves it, last written `ageMs` ago; returns its path. */
async function partial(dataDir: string, entry: string, name: string, ageMs = 0): Promise<string> {
  const dir = join(dataDir, 'files', 'uploads', entry);
  await mkdir(dir, { recursive: true });
  const file = join(dir, `.${name}.part-0123456789ab`);
  await writeFile(file, Buffer.alloc(64 * 1024, 7));
  if (ageMs) await utimes(file, new Date(Date.now() - ageMs), new Date(Date.now() - ageMs));
  return file;
}

async function finished(dataDir: string, entry: string): Promise<string> {
  const dir = join(dataDir, 'files', 'uploads', entry);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'done.wav'), 'a finished upload');
  return join(dir, 'done.wav');
}

describe.skipIf(TEST_PROFILE === 'scaleout')('partial uploads left by a process that died', () => {
  let app: TestApp;
  beforeAll(async () => {
    // Uploads may last two hours here: the age rule must follow UPLOAD_TIMEOUT_SECONDS, not stop at an hour.
    app = await startTestApp({ UPLOAD_TIMEOUT_SECONDS: '7200' }, { workers: false });
    await app.container.partialsSweptAtStart;
  });
  afterAll(async () => app?.close());

  it('the age rule is at least an hour, and longer than the longest upload UPLOAD_TIMEOUT_SECONDS allows', () => {
    expect(partialUploadAgeMs(60_000)).toBe(HOUR);
    expect(partialUploadAgeMs(HOUR)).toBeGreaterThan(HOUR);
    expect(partialUploadAgeMs(2 * HOUR)).toBeGreaterThan(2 * HOUR);
  });

  it('the periodic sweep removes a partial unwritten for longer than the age rule, keeps younger ones and finished uploads', async () => {
    const stale = await partial(app.dataDir, 'a1a1', 'crashed.wav', 3 * HOUR);
    // Older than an hour but within UPLOAD_TIMEOUT_SECONDS: may be a slow upload still under way elsewhere.
    const slow = await partial(app.dataDir, 'b2b2', 'slow.wav', 1.5 * HOUR);
    const fresh = await partial(app.dataDir, 'c3c3', 'writing.wav');
    const done = await finished(app.dataDir, 'd4d4');

    await app.container.reaper.sweep();
    expect(existsSync(stale)).toBe(false);
    expect(existsSync(join(app.dataDir, 'files', 'uploads', 'a1a1'))).toBe(false);
    expect(existsSync(slow)).toBe(true);
    expect(existsSync(fresh)).toBe(true);
    expect(existsSync(done)).toBe(true);
  });
});

describe.skipIf(TEST_PROFILE === 'scaleout')('start-up of the embedded server after kill -9', () => {
  const dirs: string[] = [];
  afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

  /** DATA_DIR as kill -9 of an embedded server leaves it: its lock, its temp folder, and a partial written a moment ago. */
  async function killedServerData(): Promise<{ dataDir: string; fresh: string; done: string }> {
    const dataDir = await mkdtemp(join(tmpdir(), 'soundry-partials-'));
    dirs.push(dataDir);
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    await writeFile(join(dataDir, '.soundry-server.lock'), JSON.stringify({ pid: dead, host: hostname(), since: new Date().toISOString() }));
    await mkdir(join(dataDir, 'tmp', `proc-${dead}-0badf00d`), { recursive: true });
    await writeFile(join(dataDir, 'tmp', `proc-${dead}-0badf00d`, 'owner.json'), JSON.stringify(ownerRecord(dead)));
    return { dataDir, fresh: await partial(dataDir, 'e5e5', 'big.wav'), done: await finished(dataDir, 'f6f6') };
  }

  // Linux: the dead server's temp folder is known dead by its pid (elsewhere it counts as live for 15 minutes).
  it.runIf(process.platform === 'linux')('removes partials of any age at once: the lock proves their writer is gone', async () => {
    const { dataDir, fresh, done } = await killedServerData();
    const app = await startTestApp({}, { workers: false, dataDir });
    try {
      const removed = await app.container.partialsSweptAtStart;
      expect(existsSync(fresh)).toBe(false);
      expect(existsSync(join(dataDir, 'files', 'uploads', 'e5e5'))).toBe(false);
      expect(existsSync(done)).toBe(true);
      expect(removed).toBe(1);
    } finally {
      await app.close();
    }
  });

  it('keeps the age rule while another live Soundry process shares the folder (an API node is not kept out by the lock)', async () => {
    const { dataDir, fresh } = await killedServerData();
    // A live neighbour's temp folder: this test process stands in for it.
    await mkdir(join(dataDir, 'tmp', `proc-${process.pid}-feedf00d`), { recursive: true });
    await writeFile(join(dataDir, 'tmp', `proc-${process.pid}-feedf00d`, 'owner.json'), JSON.stringify(ownerRecord()));
    const app = await startTestApp({}, { workers: false, dataDir });
    try {
      const removed = await app.container.partialsSweptAtStart;
      expect(existsSync(fresh)).toBe(true);
      expect(removed).toBe(0);
    } finally {
      await app.close();
    }
  });
});
