import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { Command, CommanderError } from 'commander';
import { ConfigError, loadClientConfig, loadConfig, type Config } from '../config/config.js';
import { openDatabase } from '../app/database.js';
import { SqlAccountStore } from '../adapters/sql/account-store.js';
import { SqlTaskStore } from '../adapters/sql/task-store.js';
import type { Database } from '../adapters/sql/schema.js';
import type { Kysely } from 'kysely';
import { registerAdminCommands, CliError } from './admin.js';
import { registerModelCommands } from './models.js';
import { loadCatalog } from '../models/catalog-file.js';
import { CLIENT_EXIT, describeClientError, registerClientCommands } from './client.js';
import { SoundryError } from '../sdk/index.js';

/** What commander ends with that is not a usage error: help asked for (or shown for no command), the version. */
const NOT_FAILURES = new Set(['commander.helpDisplayed', 'commander.help', 'commander.version']);

/** The commands that talk to a server over HTTP and read only the SOUNDRY_* settings. */
const CLIENT_COMMANDS = new Set(['tts', 'separate', 'enhance', 'podcast']);

/**
 * One `soundry` bin. Admin commands (keys, accounts, credits, tasks, models) work on the server's database
 * directly: one JSON object on stdout per command; errors as {"error": ...} on stderr, exit 1. Client commands
 * (tts, separate, enhance, podcast) talk to a running server over HTTP (src/cli/client.ts). Usage errors of any
 * command are {"error": ...} too, exit 2.
 */
async function main(argv: string[]): Promise<void> {
  // A client command reads SOUNDRY_* only: its own bad value is bad input (exit 2), and the server's settings, which it
  // does not use, cannot stop it (PORT=abc in the shell made `soundry tts` exit 1, found from outside).
  const clientCommand = CLIENT_COMMANDS.has(argv[2] ?? '');
  let client: ReturnType<typeof loadClientConfig>;
  try {
    client = loadClientConfig(process.env);
  } catch (err) {
    if (clientCommand && err instanceof ConfigError) throw new SoundryError(err.message, 'input');
    throw err;
  }
  let loaded: Config | null = null;
  try {
    loaded = loadConfig(process.env);
  } catch (err) {
    if (!clientCommand) throw err;
  }
  let db: Kysely<Database> | null = null;
  // Same database as the server: Postgres when DATABASE_URL is set, else SQLite under DATA_DIR.
  // Said on stderr every time: a key made on another DATA_DIR than the server's is "Invalid API key" there.
  const database = async (config: Config) => {
    if (!db) {
      const where = config.DATABASE_URL ? `PostgreSQL (DATABASE_URL)` : `SQLite ${config.DB_PATH} (DATA_DIR=${config.DATA_DIR})`;
      process.stderr.write(`soundry: using the database ${where}; the server must use the same one\n`);
      // A mistyped DATA_DIR made a new, empty database without a word beyond the line above (found from outside).
      if (!config.DATABASE_URL && !existsSync(config.DB_PATH)) {
        process.stderr.write(`soundry: there is no database at ${config.DB_PATH} yet: this command creates a new, empty one. If the server runs with another DATA_DIR, this is not its database: set the same DATA_DIR\n`);
      }
      db = await openDatabase(config, { applicationName: 'soundry-cli', poolSize: 1 });
    }
    return db;
  };
  const print = (obj: unknown) => process.stdout.write(`${JSON.stringify(obj)}\n`);
  const { version } = z.object({ version: z.string() }).parse(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')));
  const program = new Command('soundry')
    .description('Soundry: client commands for a running server, and admin commands on its database')
    .version(version)
    // commander's usage errors (unknown option, missing or invalid argument) were plain text, exit 1, where every other
    // error is one JSON object (found from outside): now {"error": ...} too, exit 2. Set before any command is added,
    // since a command copies its parent's output and exit settings when it is made.
    // commander's own "error: " prefix goes: the key already says it.
    .configureOutput({ outputError: (str, write) => write(`${JSON.stringify({ error: str.trim().replace(/^error: /, '') })}\n`) })
    .exitOverride((err) => {
      throw NOT_FAILURES.has(err.code) ? err : new CommanderError(CLIENT_EXIT.input, err.code, err.message);
    });
  registerClientCommands(program, { url: client.SOUNDRY_URL, apiKey: client.SOUNDRY_API_KEY, timeoutSeconds: client.SOUNDRY_TIMEOUT_SECONDS, print, stderr: process.stderr });
  // Without the server's configuration (a client command with a server setting it does not use gone wrong) only the client commands are there.
  const config = loaded;
  if (config) registerServerSideCommands(program, config, database, print);
  try {
    await program.parseAsync(argv);
  } finally {
    await (db as Kysely<Database> | null)?.destroy();
  }
}

/** The admin and model commands: on the server's database and models folder, from its configuration. */
function registerServerSideCommands(program: Command, config: Config, database: (config: Config) => Promise<Kysely<Database>>, print: (obj: unknown) => void): void {
  registerAdminCommands(program, {
    accounts: async () => new SqlAccountStore(await database(config)),
    tasks: async () => new SqlTaskStore(await database(config)),
    print,
  });
  registerModelCommands(program, {
    modelsDir: config.MODELS_DIR,
    print,
    catalog: loadCatalog(config.MODELS_CATALOG_FILE),
    ...(config.MODELS_BASE_URL ? { baseUrl: config.MODELS_BASE_URL } : {}),
    progressBar: process.stderr.isTTY === true,
  });
}

main(process.argv).catch((err: unknown) => {
  if (err instanceof CommanderError) {
    // Said already (help, the version, or a usage error as JSON); help and version are not failures, exit 0.
    process.exit(err.exitCode);
  }
  if (err instanceof SoundryError) {
    const { message, exitCode } = describeClientError(err);
    process.stderr.write(`soundry: ${message}\n`);
    process.exit(exitCode);
  }
  const message = err instanceof CliError || err instanceof Error ? err.message : String(err);
  process.stderr.write(`${JSON.stringify({ error: message })}\n`);
  process.exit(1);
});
