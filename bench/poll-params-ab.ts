/**
 * What a poll reads of a task (SqlTaskStore on the embedded profile's synchronous read connection), an older
 * checkout's store against this one, in one process on one database, alternating, CPU per call from
 * process.cpuUsage, for tasks whose params are as big as real ones: a TTS sentence, a long TTS text, and
 * podcast episodes (a podcast_audio task stores its whole script, title, processed content and the script
 * step's source and training text; tens to hundreds of KB).
 *   BENCH_BEFORE_SRC=/tmp/before/src node --import tsx bench/poll-params-ab.ts
 * where /tmp/before is `git archive <rev> src | tar -x -C /tmp/before` (with a node_modules link). A checkout
 * before getForQuery is measured through its get() and read connection's task(), as its polls ran.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { openSqlite } from '../src/adapters/sqlite/database.js';
import { SqliteReadConnection } from '../src/adapters/sqlite/read-connection.js';
import { SqlTaskStore } from '../src/adapters/sql/task-store.js';
import { machine } from './lib.js';

const beforeSrc = process.env.BENCH_BEFORE_SRC;
if (!beforeSrc) throw new Error("set BENCH_BEFORE_SRC to an older checkout's src folder");
type Poll = (id: string) => Promise<unknown>;
interface OlderStore { get(id: string): Promise<unknown>; getForQuery?(id: string): Promise<unknown> }
interface OlderReads { task?(id: string): unknown; queried?(id: string): unknown; close(): void }
const olderStore = (await import(resolve(beforeSrc, 'adapters/sql/task-store.ts'))) as { SqlTaskStore: new (db: unknown, opts: Record<string, unknown>) => OlderStore };
const olderReads = (await import(resolve(beforeSrc, 'adapters/sqlite/read-connection.ts'))) as { SqliteReadConnection: new (path: string) => OlderReads };
const CALLS = Number(process.env.BENCH_CALLS ?? 20_000);
const ROUNDS = 6;

const sentence = 'The quick brown fox tells the listeners what happened in the valley, and why it matters to them. ';
/** A podcast_audio task's params with `lines` script lines and a source text of `sourceChars`. */
function episodeParams(lines: number, sourceChars: number) {
  const source = sentence.repeat(Math.ceil(sourceChars / sentence.length)).slice(0, sourceChars);
  return {
    v: 1,
    scriptTaskId: 'script-1',
    title: 'What happened in the valley',
    processedContent: source.slice(0, 20_000),
    language: 'en',
    lines: Array.from({ length: lines }, (_, i) => ({ role: i % 2 ? 'B' : 'A', name: i % 2 ? 'Sam' : 'Alex', avatar: '', text: sentence.repeat(3), voiceId: 'espeak:en-us:m1', sourceIndex: i })),
    hightlights: ['the valley', 'the fox'],
    sourceData: source,
    trainData: '',
  };
}
const CASES = [
  { name: 'TTS, one sentence', kind: 'tts' as const, params: { v: 1, voiceKey: 'espeak:en-us:m1', text: 'Benchmark sentence.', speed: 1, emotion: 'auto', language: 'en', format: 'mp3' } },
  { name: 'TTS, 5,000 characters (TTS_MAX_CHARS)', kind: 'tts' as const, params: { v: 1, voiceKey: 'espeak:en-us:m1', text: sentence.repeat(50).slice(0, 5000), speed: 1, emotion: 'auto', language: 'en', format: 'mp3' } },
  { name: 'podcast episode, 60 lines, 15,000-character source', kind: 'podcast_audio' as const, params: episodeParams(60, 15_000) },
  { name: 'podcast episode, 200 lines, 100,000-character source', kind: 'podcast_audio' as const, params: episodeParams(200, 100_000) },
];

const dir = await mkdtemp(join(tmpdir(), 'soundry-poll-params-'));
const path = join(dir, 'soundry.db');
const db = await openSqlite(path);
const reads = new SqliteReadConnection(path);
const older = new olderReads.SqliteReadConnection(path);
try {
  const now = Date.now();
  const after = new SqlTaskStore(db, { readQueried: (id) => reads.queried(id) });
  const olderOpts = older.queried ? { readQueried: (id: string) => older.queried!(id) } : { readRow: (id: string) => older.task!(id) };
  const before = new olderStore.SqlTaskStore(db, olderOpts);
  const polls: Record<'before' | 'after', Poll> = {
    before: before.getForQuery ? (id) => before.getForQuery!(id) : (id) => before.get(id),
    after: (id) => after.getForQuery(id),
  };
  console.log(`Machine: ${machine()}. Embedded SQLite, ${CALLS} reads per round, ${ROUNDS} rounds alternating. Measured ${new Date().toISOString()}.\n`);
  console.log('| task | params (JSON) | before us/poll (median) | after us/poll (median) |');
  console.log('|---|---|---|---|');
  for (const [i, c] of CASES.entries()) {
    const id = `task-${i}`;
    await after.create({ id, kind: c.kind, accountId: 'acct', apiKeyId: 'key', params: c.params, createdAt: now, expiresAt: now + 3_600_000 });
    const perCall: Record<'before' | 'after', number[]> = { before: [], after: [] };
    const calls = Math.max(500, Math.round(CALLS / Math.max(1, JSON.stringify(c.params).length / 2000)));
    for (let round = 0; round < ROUNDS; round++) {
      // Alternating which goes first, so that warm-up and load swings fall on both.
      for (const name of round % 2 ? (['after', 'before'] as const) : (['before', 'after'] as const)) {
        const start = process.cpuUsage();
        for (let n = 0; n < calls; n++) await polls[name](id);
        const used = process.cpuUsage(start);
        perCall[name].push((used.user + used.system) / calls);
      }
    }
    const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
    console.log(`| ${c.name} | ${(JSON.stringify(c.params).length / 1024).toFixed(1)} KB | ${median(perCall.before).toFixed(1)} | ${median(perCall.after).toFixed(1)} |`);
  }
} finally {
  reads.close();
  older.close();
  await db.destroy();
  await rm(dir, { recursive: true, force: true });
}
