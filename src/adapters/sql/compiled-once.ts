import type { Compilable } from 'kysely';

/** Marks a parameter filled at run time when a statement is compiled once (see compileOnce). */
const SLOT = '\u0000slot:';

/**
 * A placeholder for `name` in a query compiled once. Kysely never inspects bound values, so a marker
 * string may stand where the column's type says number; compileOnce's bind swaps in the real value per run.
 */
export function slot<T>(name: string): T {
  return `${SLOT}${name}` as T;
}

/** Every column of a row as a slot of the same name. */
export function slots<R extends object>(sample: R): R {
  return Object.fromEntries(Object.keys(sample).map((k) => [k, slot(k)])) as R;
}

/** A statement's SQL text, written once, and the parameters of one run of it. */
export interface CompiledOnce {
  sql: string;
  /** The statement's parameters in order: each slot from `values` by name, every other one as compiled. */
  bind(values: Record<string, unknown>): unknown[];
}

/**
 * SQL written by Kysely from the typed schema, once, for a driver to run as a prepared statement: the
 * same statement the Kysely path runs, without building and compiling it on every call. Used by the
 * hot paths of both databases (SqliteTaskCreates, PostgresPollReads) so that neither holds SQL text of
 * its own that could drift from the schema.
 */
export function compileOnce(query: Compilable): CompiledOnce {
  const compiled = query.compile();
  const fixed = compiled.parameters;
  const names = fixed.map((p) => (typeof p === 'string' && p.startsWith(SLOT) ? p.slice(SLOT.length) : null));
  return { sql: compiled.sql, bind: (values) => names.map((name, i) => (name === null ? fixed[i] : values[name])) };
}
