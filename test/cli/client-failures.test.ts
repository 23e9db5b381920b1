import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { answer, startFakeApi, type FakeApi } from '../helpers/fake-api.js';
import { loadClientConfig } from '../../src/config/config.js';
import { REPO_ROOT, until } from '../helpers/processes.js';

/**
 * The client commands when the server fails them, found from outside: a server that accepts and never answers
 * hung the CLI for ever; a server gone mid-wait, or a Ctrl-C, ended it without the id of the task it had created
 * (and that may be charged). `node --import tsx src/cli/main.ts` as a child process, against a node:http stand-in
 * of the server's routes on 127.0.0.1.
 */
const API = '/audio/api/v1/api-keys';
const TASK = 'tts_0123456789abcdef';
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

/** Answers the create, then `waitingPolls` polls "waiting", then leaves the rest to `last`. */
const taskServer = (last: (res: import('node:http').ServerResponse, api: FakeApi) => void, waitingPolls: number) => {
  let polls = 0;
  return fake({
    [`${API}/tts/task/create`]: (_req, res) => answer(res, { job_id: TASK }),
    [`${API}/tts/task/get`]: (_req, res, api) => (++polls <= waitingPolls ? answer(res, { status: 'waiting', output: '', progress: 0.2 }) : last(res, api)),
  });
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

  it('a server that dies mid-wait: the task id and kind on stderr, exit 5', async () => {
    const api = await taskServer((res, self) => {
      res.socket?.destroy();
      void self.shutdown();
    }, 1);
    const r = await cli(['tts', 'x', '--voice', '1', '-o', join(dir, 'b.mp3')], { SOUNDRY_URL: api.base });
    expect(r.code, r.err).toBe(5);
    expect(r.err).toContain(`soundry: task ${TASK} (tts) was created; the server stopped answering while waiting for it: `);
    expect(r.err).toContain(`soundry tasks show ${TASK}`);
    expect(api.seen.filter((s) => s.endsWith('/create'))).toHaveLength(1);
  }, 30_000);

  it('Ctrl-C while waiting: the task id on stderr, exit 130, no partial file', async () => {
    const api = await taskServer(() => undefined, Infinity);
    const out = join(dir, 'c.mp3');
    const r = await cli(['tts', 'x', '--voice', '1', '-o', out], { SOUNDRY_URL: api.base }, (child) => {
      void until('the first poll', async () => api.seen.some((s) => s.endsWith('/get')), 15_000).then(() => child.kill('SIGINT'));
    });
    expect(r.code, r.err).toBe(130);
    expect(r.err).toContain('Interrupted (Ctrl-C)');
    expect(r.err).toContain(`task ${TASK} (tts) was created and keeps running on the server`);
    expect(r.ms).toBeLessThan(15_000);
    expect(await readdir(dir)).not.toContain('c.mp3');
  }, 30_000);
});

describe('a failure once the task has finished', () => {
  // Found from outside: a Ctrl-C or a silent server while the result downloaded said the task "keeps running on the
  // server" or that the server "stopped answering while waiting for it", of a task that had succeeded.
  it('a download that goes silent says the task had finished, not that it keeps running', async () => {
    const api = await fake({
      [`${API}/tts/task/create`]: (_req, res) => answer(res, { job_id: TASK }),
      [`${API}/tts/task/get`]: (_req, res, self) => answer(res, { status: 'success', output: `${self.base}/r.mp3` }),
      '/r.mp3': (_req, res) => {
        res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': 1000 });
        res.write(Buffer.alloc(10));
      },
    });
    const r = await cli(['tts', 'x', '--voice', '1', '-o', join(dir, 'd.mp3')], { SOUNDRY_URL: api.base, SOUNDRY_TIMEOUT_SECONDS: '1' });
    expect(r.code, r.err).toBe(5);
    expect(r.err).toContain(`soundry: task ${TASK} (tts) was created and had finished on the server, where it may be charged; its result can be fetched again, but the command failed: No answer from ${api.base} for 1 s (download of ${api.base}/r.mp3)`);
    expect(r.err).not.toContain('keeps running');
    expect(r.err).not.toContain('while waiting for it');
  }, 30_000);
});

describe('the client settings', () => {
  // Found from outside: a bad SOUNDRY_TIMEOUT_SECONDS was exit 1 in zod's words ("expected int, received number"), and
  // a server setting the client does not use (PORT=abc in the shell) stopped every client command.
  it('a bad SOUNDRY_TIMEOUT_SECONDS is bad input: exit 2, saying what is allowed and what was given', async () => {
    for (const bad of ['-1', 'abc', '1.5']) {
      const r = await cli(['tts', 'x', '--voice', '1', '-o', join(dir, 'bad.mp3')], { SOUNDRY_URL: 'http://127.0.0.1:9', SOUNDRY_TIMEOUT_SECONDS: bad });
      expect(r.code, r.err).toBe(2);
      expect(r.err).toBe(`soundry: SOUNDRY_TIMEOUT_SECONDS must be a whole number of seconds from 0 (no limit) to 86400, e.g. 30, got "${bad}"\n`);
    }
  }, 60_000);

  it('a server setting the client does not read does not stop it', async () => {
    const silent = await fake({}, () => undefined);
    const r = await cli(['tts', 'x', '--voice', '1', '-o', join(dir, 'port.mp3')], { SOUNDRY_URL: silent.base, SOUNDRY_TIMEOUT_SECONDS: '1', PORT: 'abc' });
    expect(r.code, r.err).toBe(5);
    expect(r.err).toContain(`No answer from ${silent.base} for 1 s`);
  }, 30_000);

  it('an empty SOUNDRY_TIMEOUT_SECONDS is unset (30 s), not 0 (no limit)', () => {
    expect(loadClientConfig({ SOUNDRY_TIMEOUT_SECONDS: '' }).SOUNDRY_TIMEOUT_SECONDS).toBe(30);
    expect(loadClientConfig({ SOUNDRY_TIMEOUT_SECONDS: '0' }).SOUNDRY_TIMEOUT_SECONDS).toBe(0);
  });
});

describe('usage errors', () => {
  it('are one JSON object on stderr, exit 2, for the program and its subcommands', async () => {
    const cases: [string[], RegExp][] = [
      [['tts'], /missing required argument 'text'/],
      [['tts', 'x', '--bogus'], /unknown option '--bogus'/],
      [['tts', 'x', '--voice', 'abc'], /argument 'abc' is invalid\. --voice must be a whole number/],
      [['nope'], /unknown command 'nope'/],
      [['keys', 'create', '--credits'], /option '--credits <n>' argument missing/],
      [['separate', 'a', 'b'], /too many arguments for 'separate'/],
    ];
    for (const [args, message] of cases) {
      const r = await cli(args);
      expect(r.code, `${args.join(' ')}: ${r.err}`).toBe(2);
      expect(r.err.endsWith('\n') && r.err.trim().split('\n')).toHaveLength(1);
      expect(JSON.parse(r.err)).toEqual({ error: expect.stringMatching(message) });
      expect(JSON.parse(r.err).error).not.toMatch(/^error: /);
      expect(r.out).toBe('');
    }
  }, 120_000);

  it('help and the version are not errors: stdout, exit 0', async () => {
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('Usage: soundry');
    const sub = await cli(['tts', '--help']);
    expect(sub.code).toBe(0);
    expect(sub.out).toContain('Usage: soundry tts');
    const version = await cli(['--version']);
    expect(version.code).toBe(0);
    expect(version.out.trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect(version.err).toBe('');
  }, 60_000);
});
