/**
 * The separation-quality bench on a tiny MUSDB-like folder written here: which stems it scores against which
 * references, that it runs the engine a task would get and writes the markdown table (the metric itself is proved
 * against museval in test/engines/reference/bsseval.test.ts).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeWav } from '../../src/media/wav.js';
import { findSongs, scorableStems } from '../../bench/separation-quality-songs.js';
import { benchSeparationQuality } from '../../bench/separation-quality.js';

const RATE = 44100;
const dir = mkdtempSync(join(tmpdir(), 'sq-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A stereo tone with a slow tremolo, different per stem, `seconds` long. */
function tone(freq: number, seconds: number, level: number): Float32Array[] {
  const n = Math.round(seconds * RATE);
  return [0, 1].map((ch) => Float32Array.from({ length: n }, (_, i) => level * (0.6 + 0.4 * Math.sin(i / 7000 + ch)) * Math.sin((2 * Math.PI * freq * i) / RATE)));
}

function writeSong(name: string, stems: Record<string, Float32Array[]>): void {
  const songDir = join(dir, name);
  mkdirSync(songDir, { recursive: true });
  const n = Object.values(stems)[0]![0]!.length;
  const mix = [0, 1].map((ch) => Float32Array.from({ length: n }, (_, i) => Object.values(stems).reduce((a, s) => a + s[ch]![i]!, 0)));
  writeFileSync(join(songDir, 'mixture.wav'), encodeWav({ sampleRate: RATE, channels: mix }, 32));
  for (const [stem, ch] of Object.entries(stems)) writeFileSync(join(songDir, `${stem}.wav`), encodeWav({ sampleRate: RATE, channels: ch }, 32));
}

writeSong('group/song_a', { vocals: tone(440, 3, 0.2), drums: tone(3000, 3, 0.1), bass: tone(60, 3, 0.3), other: tone(700, 3, 0.1) });
writeSong('song_b', { guitar: tone(330, 3, 0.2), backing: tone(90, 3, 0.2) });

describe('separation-quality bench', () => {
  it('finds MUSDB-like songs up to two levels deep and picks each model type\'s references', () => {
    const songs = findSongs(dir);
    expect(songs.map((s) => s.name).sort()).toEqual(['group/song_a', 'song_b']);
    const a = songs.find((s) => s.name === 'group/song_a')!;
    const b = songs.find((s) => s.name === 'song_b')!;
    // MUSDB's accompaniment: every stem file the model does not name.
    expect(Object.fromEntries(scorableStems(a, 350))).toEqual({ vocals: ['vocals'], remainder: ['bass', 'drums', 'other'] });
    expect(Object.fromEntries(scorableStems(a, 501))).toEqual({ bass: ['bass'], drums: ['drums'], vocals: ['vocals'], other: ['other'] });
    // 320 names piano and guitar, which song_a has no file for: its `other` could hide them, so it is not scored.
    expect(Object.fromEntries(scorableStems(a, 320))).toEqual({ bass: ['bass'], drums: ['drums'], vocals: ['vocals'] });
    expect(Object.fromEntries(scorableStems(b, 390))).toEqual({ guitar: ['guitar'], remainder: ['backing'] });
    expect(scorableStems(b, 350).size).toBe(0);
  });

  it('runs the built-in engine as a task would and writes the table with the trivial estimates', async () => {
    const out = join(dir, 'result.md');
    await benchSeparationQuality(['--dir', dir, '--engine', 'builtin', '--model-types', '350,501', '--out', out]);
    const md = readFileSync(out, 'utf8');
    const rows = md.split('\n').filter((l) => l.startsWith('| group/song_a'));
    expect(rows.map((r) => r.split('|').slice(2, 5).map((c) => c.trim()).join(' '))).toEqual([
      '350 vocals builtin-dsp', '350 remainder builtin-dsp', '501 bass builtin-dsp', '501 drums builtin-dsp', '501 vocals builtin-dsp', '501 other builtin-dsp',
    ]);
    for (const r of rows) {
      const cells = r.split('|').map((c) => c.trim());
      // SDR is a number, or the stem is reported as silent (the engine found nothing): never a made-up figure.
      expect(cells[5] === 'n/a' ? cells[11] : cells[5]).toMatch(cells[5] === 'n/a' ? /silent estimate/ : /^-?\d+\.\d\d$/);
    }
    expect(md).toContain('Command: `npm run bench -- separation-quality --dir');
    expect(md).toMatch(/Load average \(1\/5\/15 min\) [\d.]+\/[\d.]+\/[\d.]+/);
  }, 240_000);
});
