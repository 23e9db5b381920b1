import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SoundryError, Transport } from '../../src/sdk/transport.js';

/**
 * Found from outside: a result download cut off part way truncated the file the user already had at the output path,
 * left a half-written one and exited as a generic error. Now the bytes go to a file beside it, renamed over it only
 * once whole. A real server that cuts its answer.
 */
const WHOLE = Buffer.alloc(100_000, 7);
let server: Server;
let base = '';
let dir = '';

beforeAll(async () => {
  server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': WHOLE.length });
    if (req.url === '/cut.mp3') {
      res.write(WHOLE.subarray(0, 4000));
      setTimeout(() => res.socket?.destroy(), 50);
      return;
    }
    res.end(WHOLE);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  dir = await mkdtemp(join(tmpdir(), 'soundry-sdk-dl-'));
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  await rm(dir, { recursive: true, force: true });
});

describe('SDK result downloads', () => {
  const transport = () => new Transport({ baseUrl: base, apiKey: 'sk_test' });

  it('a download cut off part way leaves the file already there as it was, and says so as a network error', async () => {
    const dest = join(dir, 'keep.mp3');
    await writeFile(dest, 'the user\'s own file');
    const err = await transport().download(`${base}/cut.mp3`, dest).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SoundryError);
    expect((err as SoundryError).kind).toBe('network');
    expect((err as SoundryError).message).toMatch(new RegExp(`nothing was written to ${dest.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
    expect(await readFile(dest, 'utf8')).toBe('the user\'s own file');
    expect(await readdir(dir)).toEqual(['keep.mp3']);
    // A whole answer replaces it.
    await transport().download(`${base}/whole.mp3`, dest);
    expect((await readFile(dest)).equals(WHOLE)).toBe(true);
    expect(await readdir(dir)).toEqual(['keep.mp3']);
  });

  it("several results are all or none: a cut on the second stem leaves the first one's earlier file as it was", async () => {
    // Found from outside: a Ctrl-C between two stems left new stems beside an earlier run's in the same folder.
    const folder = join(dir, 'earlier-run');
    await mkdir(folder);
    await writeFile(join(folder, 'vocals.mp3'), 'earlier vocals');
    await writeFile(join(folder, 'instrumental.mp3'), 'earlier instrumental');
    const stems = [
      { url: `${base}/whole.mp3`, dest: join(folder, 'vocals.mp3') },
      { url: `${base}/cut.mp3`, dest: join(folder, 'instrumental.mp3') },
    ];
    const err = await transport().downloadAll(stems).catch((e: unknown) => e);
    expect((err as SoundryError).kind).toBe('network');
    expect(await readFile(join(folder, 'vocals.mp3'), 'utf8')).toBe('earlier vocals');
    expect(await readFile(join(folder, 'instrumental.mp3'), 'utf8')).toBe('earlier instrumental');
    expect((await readdir(folder)).sort()).toEqual(['instrumental.mp3', 'vocals.mp3']);
    // Both whole: both replaced.
    await transport().downloadAll([stems[0]!, { ...stems[1]!, url: `${base}/whole.mp3` }]);
    expect((await readFile(join(folder, 'vocals.mp3'))).equals(WHOLE)).toBe(true);
    expect((await readFile(join(folder, 'instrumental.mp3'))).equals(WHOLE)).toBe(true);
    expect((await readdir(folder)).sort()).toEqual(['instrumental.mp3', 'vocals.mp3']);
    await rm(folder, { recursive: true });
  });

  it('an output path that is a folder is the caller\'s to fix (input), and leaves nothing behind', async () => {
    const folder = join(dir, 'stems');
    await mkdir(folder);
    const err = await transport().download(`${base}/whole.mp3`, folder).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SoundryError);
    expect((err as SoundryError).kind).toBe('input');
    expect(await readdir(folder)).toEqual([]);
    expect((await readdir(dir)).sort()).toEqual(['keep.mp3', 'stems']);
  });
});
