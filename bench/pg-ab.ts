/**
 * What the PostgreSQL path benches share (bench/pg-poll-ab.ts, bench/pg-create-ab.ts): a scratch database of
 * their own, the CPU of the backends serving it, and the alternating before/after loop with its table rows.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { openPostgresHandles } from '../src/adapters/postgres/database.js';
import { processCpuSeconds } from './lib.js';

/** CPU seconds so far of each PostgreSQL backend connected to `database` (pid to seconds; the server must run on this machine). */
export async function backendCpu(admin: pg.Client, database: string): Promise<Map<number, number>> {
  const { rows } = await admin.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1', [database]);
  const cpu = new Map<number, number>();
  for (const { pid } of rows) {
    try {
      cpu.set(pid, processCpuSeconds(pid));
    } catch {
      // Gone between the listing and the read: its CPU is lost either way.
    }
  }
  return cpu;
}

/**
 * The settings both PostgreSQL path benches read: BENCH_DATABASE_URL (the server and a user that may CREATE
 * DATABASE), BENCH_CALLS per load (default `defaultCalls`), BENCH_ROUNDS; 10 calls in flight on a pool of 10.
 */
export function pgBenchSettings(defaultCalls: number): { adminUrl: string; calls: number; rounds: number; inFlight: number } {
  return {
    adminUrl: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    calls: Number(process.env.BENCH_CALLS ?? defaultCalls),
    rounds: Number(process.env.BENCH_ROUNDS ?? 4),
    inFlight: 10,
  };
}

export type ScratchPostgres = Awaited<ReturnType<typeof openPostgresHandles>> & { admin: pg.Client; name: string; url: URL; drop(): Promise<void> };

/** A new database on the server at `adminUrl` (the user must be allowed to CREATE DATABASE), opened with a pool of `poolSize`. */
export async function scratchPostgres(adminUrl: string, poolSize: number): Promise<ScratchPostgres> {
  // Lower-case hex: safe unquoted (CREATE DATABASE takes no parameters).
  const name = `soundry_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const handles = await openPostgresHandles(url.toString(), { poolSize });
  return {
    ...handles,
    admin,
    name,
    url,
    drop: async () => {
      await handles.db.destroy();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

/**
 * Each load on each path, `calls` calls with `inFlight` at a time, the paths' order swapped every round so that
 * a load swing on a shared machine hits both alike. One markdown row per load: round, load name (when there is
 * more than one), path, calls/s, this process's CPU per call, the backends' CPU per call, the 1-minute load.
 */
export async function alternate<P>(
  scratch: ScratchPostgres,
  opts: { rounds: number; calls: number; inFlight: number; paths: Record<'kysely' | 'named', P>; loads: Record<string, (path: P) => Promise<unknown>> },
): Promise<string[]> {
  const { rounds, calls, inFlight, paths, loads } = opts;
  const named = Object.keys(loads).length > 1;
  const rows: string[] = [];
  for (let round = 1; round <= rounds; round++) {
    const load1 = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
    for (const [loadName, load] of Object.entries(loads)) {
      for (const pathName of round % 2 ? (['kysely', 'named'] as const) : (['named', 'kysely'] as const)) {
        const dbBefore = await backendCpu(scratch.admin, scratch.name);
        const cpuBefore = process.cpuUsage();
        const started = performance.now();
        await Promise.all(
          Array.from({ length: inFlight }, async () => {
            for (let i = 0; i < calls / inFlight; i++) await load(paths[pathName]);
          }),
        );
        const seconds = (performance.now() - started) / 1000;
        const cpu = process.cpuUsage(cpuBefore);
        let dbCpu = 0;
        for (const [pid, s] of await backendCpu(scratch.admin, scratch.name)) dbCpu += s - (dbBefore.get(pid) ?? 0);
        const cells = [round, ...(named ? [loadName] : []), pathName, (calls / seconds).toFixed(0), ((cpu.user + cpu.system) / calls).toFixed(1), ((dbCpu * 1e6) / calls).toFixed(1), load1];
        rows.push(`| ${cells.join(' | ')} |`);
        console.error(rows.at(-1));
      }
    }
  }
  return rows;
}
