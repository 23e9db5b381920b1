import { freshPg, freshPgReads } from './queue-backends.js';
import { queueContract } from './queue-contract.js';

// The SQL queue on Postgres claims with FOR UPDATE SKIP LOCKED instead of SQLite's guarded UPDATE.
queueContract('SQL queue on PostgreSQL', freshPg);
queueContract('SQL queue on PostgreSQL, positions as prepared statements on the pool', freshPgReads);
