import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * The server the Postgres tests use: started on the development and CI machines by
 * scripts/ensure-services.sh (which .ci/run calls). TEST_PG_URL (as for the queue tests) points
 * them elsewhere; its user must be allowed to CREATE DATABASE.
 */
const ADMIN_URL = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  /** postgres:// URL of the new, empty database. */
  url: string;
  /** Drops it, closing whatever connections are still open on it. */
  drop(): Promise<void>;
}

function withoutPassword(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

async function asAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
  } catch (err) {
    // Not a skip: a suite that quietly stops testing Postgres looks the same as one that passes.
    throw new Error(
      `PostgreSQL is not reachable at ${withoutPassword(ADMIN_URL)} (${err instanceof Error ? err.message : String(err)}). ` +
        'The Postgres tests need it: run `bash scripts/ensure-services.sh` (CI does, in .ci/run), ' +
        'or set TEST_PG_URL to a server where the user may CREATE DATABASE.',
      { cause: err },
    );
  }
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A throwaway database (soundry_t_<random>), so test files never see each other's rows. */
export async function createTestDatabase(): Promise<TestDatabase> {
  // Lower-case hex only: safe to put in the statement unquoted (CREATE DATABASE takes no parameters).
  const name = `soundry_t_${randomBytes(6).toString('hex')}`;
  await asAdmin((c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => asAdmin(async (c) => void (await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))),
  };
}
