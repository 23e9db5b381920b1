import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeAudio, resolveMediaTools } from '../../src/media/ffmpeg.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

/**
 * The README's "Try it" and client CLI blocks, pasted into one bash session against a live server. Only two
 * things are swapped: the server's address (a free port instead of 8080) and `npm run --silent cli --` for the
 * bin it runs (bin/soundry.js), so the files land in a scratch folder instead of the repository.
 */
const run = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;
const tools = resolveMediaTools({ preferSystem: true });
let app: TestApp;
let work: string;

function readmeBlocks(readme: string): string[] {
  const from = readme.indexOf('## Try it with curl');
  const to = readme.indexOf('## Admin CLI');
  expect(from).toBeGreaterThan(0);
  expect(to).toBeGreaterThan(from);
  return [...readme.slice(from, to).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

beforeAll(async () => {
  app = await startTestApp({ WORKER_THREADS: '2' });
  work = await mkdtemp(join(tmpdir(), 'soundry-readme-'));
});
afterAll(async () => {
  await app?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('README', () => {
  it('every command of the try-it and client sections runs as written', async () => {
    const blocks = readmeBlocks(await readFile(join(root, 'README.md'), 'utf8'));
    expect(blocks.length).toBeGreaterThanOrEqual(7);
    const script = blocks
      .join('\n')
      .replaceAll('http://127.0.0.1:8080', app.baseUrl)
      .replaceAll('npm run --silent cli --', `node ${join(root, 'bin/soundry.js')}`);
    // No placeholder left for the reader to fill in.
    expect(script).not.toMatch(/<[a-z ]+>|\[\.\.\.\]|\.\.\."/i);
    const { stderr } = await run('bash', ['-euo', 'pipefail', '-c', script], {
      cwd: work,
      env: { ...process.env, DATA_DIR: app.dataDir, SOUNDRY_URL: app.baseUrl, LOG_LEVEL: 'silent' },
      maxBuffer: 16 * 1024 * 1024,
      timeout: 400_000,
    }).catch((e: { stderr?: string; stdout?: string; message: string }) => {
      throw new Error(`README commands failed: ${e.message}\n${e.stderr ?? ''}\n${(e.stdout ?? '').slice(-2000)}`);
    });
    expect(stderr).toContain(`using the database SQLite ${join(app.dataDir, 'soundry.db')}`);
    for (const file of ['hello.mp3', 'vocals.mp3', 'enhanced.mp3', 'episode.mp3', 'cli-hello.mp3', 'stems/vocals.mp3', 'cli-clean.mp3', 'cli-episode.mp3']) {
      expect((await stat(join(work, file))).size, file).toBeGreaterThan(1000);
    }
    const episode = await decodeAudio(join(work, 'episode.mp3'), { ffmpeg: tools.ffmpeg });
    expect(episode.channels[0]!.length / episode.sampleRate).toBeGreaterThan(5);
    expect(JSON.parse(await readFile(join(work, 'episode.json'), 'utf8')).data.status).toBe('success');
  }, 420_000);
});
