import type { Kysely } from 'kysely';
import { writeTransaction } from './dialect.js';

interface Pending<I, R> {
  item: I;
  resolve: (result: R) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit for SQLite: units of write work that arrive while a transaction is being written wait
 * and then go together into the next one, in arrival order, each seeing what the earlier ones wrote.
 *
 * Why: on the embedded profile a task create is a whole write transaction (BEGIN IMMEDIATE, count,
 * two inserts, COMMIT) and the commit, which writes the changed pages to the WAL, was the largest
 * single cost in the create profile (bench/results/http.md). Ten creates in flight now share one commit.
 * A write starts at the end of the event loop's current turn (setImmediate), not in the microtasks of the
 * first unit: the requests read in one turn each reach run() in their own socket callback, so starting
 * at once wrote every create alone (measured: 1.0 units per commit at 10 connections; 6-8 with the
 * deferral, bench/results/http.md). An idle server waits for nothing else, and every caller is answered
 * only after the commit holding its unit.
 *
 * All or nothing per batch: when a unit throws, the batch is rolled back and each of its units is run
 * again in its own transaction, so one failure never fails or half-writes the others.
 */
export class WriteBatcher<I, R> {
  private readonly pending: Array<Pending<I, R>> = [];
  private writing = false;

  /** `writeAll`: one transaction holding every unit, results in order; it throws if any unit does (nothing then stays written). */
  constructor(
    private readonly writeAll: (items: I[]) => Promise<R[]>,
    private readonly maxBatch = 100,
  ) {}

  run(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (!this.writing) {
        this.writing = true;
        setImmediate(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending.length > 0) await this.write(this.pending.splice(0, this.maxBatch));
    } finally {
      this.writing = false;
    }
  }

  private async write(batch: Array<Pending<I, R>>): Promise<void> {
    if (batch.length > 1) {
      let results: R[] | null = null;
      try {
        results = await this.writeAll(batch.map((p) => p.item));
      } catch {
        // Retried one by one below: each unit then gets its own result or its own error.
      }
      const written = results;
      if (written) {
        batch.forEach((p, i) => p.resolve(written[i]!));
        return;
      }
    }
    for (const p of batch) {
      try {
        p.resolve((await this.writeAll([p.item]))[0]!);
      } catch (err) {
        p.reject(err);
      }
    }
  }
}

/** writeAll for WriteBatcher from one unit's work over Kysely: the units run in order in one write transaction. */
export function unitsInTransaction<DB, I, R>(db: Kysely<DB>, work: (trx: Kysely<DB>, item: I) => Promise<R>): (items: I[]) => Promise<R[]> {
  return (items) =>
    writeTransaction(db, async (trx) => {
      const out: R[] = [];
      for (const item of items) out.push(await work(trx, item));
      return out;
    });
}
