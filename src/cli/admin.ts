import type { Command } from 'commander';
import type { AccountStore } from '../ports/accounts.js';
import type { TaskStore } from '../ports/task-store.js';
import { TASK_KINDS, type TaskKind, type TaskState } from '../domain/task.js';
import { hashApiKey, issueApiKey } from '../services/auth.js';
import { KEY_LIMITS, rateLimitProblem } from '../domain/key-limits.js';

export interface AdminDeps {
  accounts: () => Promise<AccountStore>;
  tasks: () => Promise<TaskStore>;
  print: (obj: unknown) => void;
}

export class CliError extends Error {}

/**
 * A whole number written in decimal digits, from `min` to `max`: Number() alone took '' and ' ' as 0, '0x10' as
 * 16 and '1e300' as a number no balance can hold exactly.
 */
function wholeNumber(name: string, min: number, max: number) {
  return (v: string) => {
    const n = /^\d{1,16}$/.test(v.trim()) ? Number(v.trim()) : NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new CliError(`${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(v)}`);
    return n;
  };
}

function rateLimit(v: string): number {
  const n = /^\d+(\.\d+)?$/.test(v.trim()) ? Number(v.trim()) : NaN;
  const problem = rateLimitProblem(n);
  if (problem) throw new CliError(`--rate-limit ${problem}, got ${JSON.stringify(v)}`);
  return n;
}

/** Accepts the key itself (sk_...) or its id (key_...). */
async function resolveKeyId(accounts: AccountStore, keyOrId: string): Promise<string> {
  if (keyOrId.startsWith('key_')) return keyOrId;
  const key = await accounts.findKeyByHash(hashApiKey(keyOrId));
  if (!key) throw new CliError('no such API key');
  return key.id;
}

export function registerAdminCommands(program: Command, deps: AdminDeps): void {
  const keys = program.command('keys').description('API keys');
  keys
    .command('create')
    .description('create a key (and an account unless --account is given); the key is shown only now')
    .option('--credits <n>', 'credits to add to the account', wholeNumber('--credits', 0, KEY_LIMITS.creditsMax), 0)
    .option('--rate-limit <n>', 'requests per second for this key', rateLimit)
    .option('--concurrency <n>', 'unfinished tasks and in-flight requests for this key', wholeNumber('--concurrency', 1, KEY_LIMITS.concurrencyMax))
    .option('--account <id>', 'existing account to attach the key to')
    .action(async (o: { credits: number; rateLimit?: number; concurrency?: number; account?: string }) => {
      const issued = await issueApiKey(await deps.accounts(), {
        accountId: o.account,
        credits: o.credits,
        rateLimit: o.rateLimit ?? null,
        concurrency: o.concurrency ?? null,
      });
      deps.print({ api_key: issued.apiKey, account_id: issued.account.id, key_id: issued.key.id, balance: issued.account.balance });
    });
  for (const [name, enabled] of [['disable', false], ['enable', true]] as const) {
    keys
      .command(`${name} <key>`)
      .description(`${name} a key (the key itself or its key_ id)`)
      .action(async (keyOrId: string) => {
        const accounts = await deps.accounts();
        const id = await resolveKeyId(accounts, keyOrId);
        if (!(await accounts.setKeyEnabled(id, enabled))) throw new CliError('no such API key');
        deps.print({ key_id: id, enabled });
      });
  }

  const accountsCmd = program.command('accounts').description('accounts');
  for (const [name, status] of [['suspend', 'suspended'], ['resume', 'active']] as const) {
    accountsCmd.command(`${name} <id>`).action(async (id: string) => {
      if (!(await (await deps.accounts()).setAccountStatus(id, status))) throw new CliError(`no account ${id}`);
      deps.print({ account_id: id, status });
    });
  }

  const credits = program.command('credits').description('credit balances');
  credits.command('add <account> <n>').action(async (account: string, n: string) => {
    const amount = wholeNumber('n', 1, KEY_LIMITS.creditsMax)(n);
    const store = await deps.accounts();
    if (!(await store.getAccount(account))) throw new CliError(`no account ${account}`);
    const updated = await store.adjustCredits(account, amount, 'admin_credit');
    deps.print({ account_id: account, balance: updated.balance });
  });
  credits.command('show <account>').action(async (account: string) => {
    const found = await (await deps.accounts()).getAccount(account);
    if (!found) throw new CliError(`no account ${account}`);
    deps.print({ account_id: account, balance: found.balance, status: found.status });
  });

  const tasks = program.command('tasks').description('tasks');
  tasks
    .command('list')
    .option('--status <s>', 'queued, running, success or failed (waiting = queued and running)')
    .option('--kind <k>', TASK_KINDS.join(', '))
    .option('--limit <n>', 'at most this many', wholeNumber('--limit', 1, 100_000), 100)
    .action(async (o: { status?: string; kind?: string; limit: number }) => {
      if (o.kind && !(TASK_KINDS as readonly string[]).includes(o.kind)) throw new CliError(`--kind must be one of ${TASK_KINDS.join(', ')}`);
      const states: (TaskState | undefined)[] =
        o.status === 'waiting' ? ['queued', 'running'] : [o.status as TaskState | undefined];
      if (o.status && !['waiting', 'queued', 'running', 'success', 'failed'].includes(o.status)) throw new CliError('unknown --status');
      const store = await deps.tasks();
      const found = (
        await Promise.all(states.map((state) => store.list({ state, kind: o.kind as TaskKind | undefined, limit: o.limit })))
      ).flat();
      deps.print({ total: found.length, tasks: found.map(({ params: _p, result: _r, ...t }) => t) });
    });
  tasks.command('show <id>').action(async (id: string) => {
    const task = await (await deps.tasks()).get(id);
    if (!task) throw new CliError(`no task ${id}`);
    deps.print(task);
  });
}
