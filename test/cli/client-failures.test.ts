import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeApi, type FakeApi } from '../helpers/fake-api.js';
import { REPO_ROOT } from '../helpers/processes.js';

/**
 * The client commands when the server fails them, found from outside: a server that accepts and never answers
 * hung the CLI for ever. `node --import tsx src/cli/main.ts` as a child process, against a node:http stand-in of
 * the server's routes on 127.0.0.1.
 */
const API = '/audio/api/v1/api-keys';
let dir = '';
const servers: FakeApi[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'soundry-cli-failures-'));
});
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.all(servers.splice(0).map((s) => s.shutdown()));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Ran {
  code: number | null;
  out: string;
  err: string;
  ms: number;
}

/** The CLI as a child; killed after 20 s, so a hang fails the test instead of stalling it. */
function cli(args: string[], env: Record<string, string> = {}, onChild?: (c: ChildProcess) => void): Promise<Ran> {
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, SOUNDRY_API_KEY: 'sk_test', LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += String(d)));
  child.stderr!.on('data', (d) => (err += String(d)));
  onChild?.(child);
  const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  return new Promise((resolve) => child.on('close', (code) => (clearTimeout(killer), resolve({ code, out, err, ms: Date.now() - started }))));
}

const fake = async (...args: Parameters<typeof startFakeApi>) => {
  const api = await startFakeApi(...args);
  servers.push(api);
  return api;
};

describe('client commands against a failing server', () => {
  it('a server that accepts and never answers: exit 5 after SOUNDRY_TIMEOUT_SECONDS, naming the server and the setting', async () => {
    const silent = await fake({}, () => undefined);
    const r = await cli(['tts', 'x', '--voice', '1', '-o', join(dir, 'a.mp3')], { SOUNDRY_URL: silent.base, SOUNDRY_TIMEOUT_SECONDS: '1' });
    expect(r.code, r.err).toBe(5);
    expect(r.ms).toBeLessThan(15_000);
    expect(r.err).toContain(`No answer from ${silent.base} for 1 s (POST ${API}/tts/task/create)`);
    expect(r.err).toContain('SOUNDRY_TIMEOUT_SECONDS=1');
    expect(r.err).toContain('0: no limit');
    expect(r.out).toBe('');
  }, 30_000);
});
