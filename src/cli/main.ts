import { Command, CommanderError } from 'commander';
import { loadConfig } from '../config/config.js';
import { openDatabase } from '../app/database.js';
import { SqlAccountStore } from '../adapters/sql/account-store.js';
import { SqlTaskStore } from '../adapters/sql/task-store.js';
import type { Database } from '../adapters/sql/schema.js';
import type { Kysely } from 'kysely';
import { registerAdminCommands, CliError } from './admin.js';
import { registerModelCommands } from './models.js';
import { loadCatalog } from '../models/catalog-file.js';

/** Admin CLI: one JSON object on stdout per command; errors as {"error": ...} on stderr, exit 1. */
async function main(argv: string[]): Promise<void> {
  const config = loadConfig(process.env);
  let db: Kysely<Database> | null = null;
  // Same database as the server: Postgres when DATABASE_URL is set, else SQLite under DATA_DIR.
  const database = async () => (db ??= await openDatabase(config, { applicationName: 'soundry-cli', poolSize: 1 }));
  const print = (obj: unknown) => process.stdout.write(`${JSON.stringify(obj)}\n`);
  const program = new Command('soundry').description('Soundry admin CLI').exitOverride();
  registerAdminCommands(program, {
    accounts: async () => new SqlAccountStore(await database()),
    tasks: async () => new SqlTaskStore(await database()),
    print,
  });
  registerModelCommands(program, {
    modelsDir: config.MODELS_DIR,
    print,
    catalog: loadCatalog(config.MODELS_CATALOG_FILE),
    ...(config.MODELS_BASE_URL ? { baseUrl: config.MODELS_BASE_URL } : {}),
    progressBar: process.stderr.isTTY === true,
  });
  try {
    await program.parseAsync(argv);
  } finally {
    await (db as Kysely<Database> | null)?.destroy();
  }
}

main(process.argv).catch((err: unknown) => {
  if (err instanceof CommanderError) {
    // help and version are not failures
    process.exit(err.exitCode);
  }
  const message = err instanceof CliError || err instanceof Error ? err.message : String(err);
  process.stderr.write(`${JSON.stringify({ error: message })}\n`);
  process.exit(1);
});
