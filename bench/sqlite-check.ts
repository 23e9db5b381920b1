/**
 * `node --import tsx bench/sqlite-check.ts [tasks]`: what `PRAGMA quick_check` (run by openSqlite at
 * start-up) costs on a database of N finished tasks (default 100,000), each with a TTS-sized params
 * JSON, a result JSON and its ledger row. Prints the file size and the wall time of quick_check and,
 * for comparison, integrity_check, both on a freshly opened connection (the OS page cache is warm:
 * the file was just written; a cold disk reads the whole file once more).
 */
import BetterSqlite3 from 'better-sqlite3';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite } from '../src/adapters/sqlite/database.js';
import { machine, median } from './lib.js';

const n = Number(process.argv[2] ?? 100_000);
const dir = await mkdtemp(join(tmpdir(), 'soundry-bench-check-'));
const path = join(dir, 'soundry.db');
try {
  await (await openSqlite(path)).destroy(); // the schema, as the server makes it
  const db = new BetterSqlite3(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  const text = 'The quick brown fox jumps over the lazy dog, and keeps on running. '.repeat(8);
  const insertTask = db.prepare(
    `insert into tasks (id, kind, account_id, api_key_id, state, params, result, error, engine, progress, charged, created_at, updated_at, started_at, finished_at, expires_at)
     values (?, 'tts', 'acct', 'key', 'success', ?, ?, null, 'espeak', 1, 6, ?, ?, ?, ?, ?)`,
  );
  const insertLedger = db.prepare(`insert into ledger (account_id, task_id, amount, reason, created_at) values ('acct', ?, -6, 'task', ?)`);
  const t0 = Date.now();
  db.transaction(() => {
    for (let i = 0; i < n; i++) {
      const id = `t${i.toString(16).padStart(31, '0')}`;
      const now = t0 + i;
      insertTask.run(id, JSON.stringify({ v: 1, text, voice_id: 1, emotion: 0, speed: 1, language: 'en', format: 'mp3' }), JSON.stringify({ url: `tasks/${id}/output.mp3`, seconds: 12.5, size: 200_000 }), now, now, now, now, now + 7 * 86_400_000);
      insertLedger.run(id, now);
    }
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  const size = (await stat(path)).size;

  const time = (pragma: string) => {
    const runs: number[] = [];
    for (let r = 0; r < 3; r++) {
      const c = new BetterSqlite3(path, { readonly: true });
      const t = performance.now();
      const out = c.pragma(pragma, { simple: true });
      runs.push(performance.now() - t);
      c.close();
      if (out !== 'ok') throw new Error(`${pragma}: ${String(out)}`);
    }
    return median(runs);
  };
  console.log(machine());
  console.log(`${n} tasks, ${(size / 2 ** 20).toFixed(1)} MiB`);
  console.log(`quick_check: ${time('quick_check').toFixed(0)} ms (median of 3)`);
  console.log(`integrity_check: ${time('integrity_check').toFixed(0)} ms (median of 3)`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
