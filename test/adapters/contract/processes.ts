import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { SqlDialect } from '../../../src/adapters/sql/dialect.js';

const root = new URL('../../..', import.meta.url).pathname;

/** Waits for the child's next stdout line (its "ready", then its result). */
function lineReader(child: ChildProcess): () => Promise<string> {
  const lines = createInterface({ input: child.stdout! });
  const queue: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  lines.on('line', (line) => (waiting.length ? waiting.shift()!(line) : queue.push(line)));
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return () =>
    new Promise((resolve, reject) => {
      const queued = queue.shift();
      if (queued !== undefined) return resolve(queued);
      waiting.push(resolve);
      child.once('close', (code) => reject(new Error(`store-child exited (${code}) before answering: ${stderr.slice(-2000)}`)));
    });
}

/**
 * Runs one store-child.ts process per argument list, all started at once: each loads, says
 * ready, and only when all are ready do they get "go". Returns each one's JSON answer.
 */
export async function runNodes(dialect: SqlDialect, location: string, argLists: string[][]): Promise<unknown[]> {
  const children = argLists.map((args) =>
    spawn(process.execPath, ['--import', 'tsx', 'test/adapters/store-child.ts', dialect, location, ...args], {
      cwd: root,
      stdio: ['pipe', 'pipe', 'pipe'],
    }),
  );
  try {
    const readers = children.map(lineReader);
    for (const read of readers) expectLine(await read(), 'ready');
    for (const child of children) child.stdin!.write('go\n');
    return await Promise.all(readers.map(async (read) => JSON.parse(await read()) as unknown));
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill();
  }
}

function expectLine(line: string, want: string): void {
  if (line !== want) throw new Error(`store-child said ${JSON.stringify(line)}, expected ${want}`);
}
