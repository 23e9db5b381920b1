import type pg from 'pg';
import type { Compilable } from 'kysely';
import { compileOnce, type CompiledOnce } from '../sql/compiled-once.js';

/** Where a named statement runs: the pool (a connection of its choosing) or one client held for a transaction. */
export interface Queryable {
  query<R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>>;
}

/**
 * A statement compiled once (compileOnce) and run under its name, so each connection parses and plans it
 * once and afterwards only binds and executes it. The names are per connection and the pool holds only
 * Soundry's statements, so a fixed `soundry_` prefix keeps them apart.
 */
export class Named {
  private readonly sql: string;
  private readonly bind: CompiledOnce['bind'];

  constructor(
    private readonly name: string,
    query: Compilable,
  ) {
    ({ sql: this.sql, bind: this.bind } = compileOnce(query));
  }

  async first<R extends pg.QueryResultRow>(on: Queryable, values: Record<string, unknown>): Promise<R | undefined> {
    const res = await on.query<R>({ name: this.name, text: this.sql, values: this.bind(values) });
    return res.rows[0];
  }

  async run(on: Queryable, values: Record<string, unknown>): Promise<void> {
    await on.query({ name: this.name, text: this.sql, values: this.bind(values) });
  }
}
