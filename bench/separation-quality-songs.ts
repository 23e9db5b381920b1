import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, extname, join, relative } from 'node:path';
import type { AudioData } from '../src/media/audio.js';
import { decodeAudio, resolveMediaTools } from '../src/media/ffmpeg.js';
import { outputStems, REMAINDER_STEM } from '../src/engines/separation/engine.js';

/**
 * The separation-quality bench's songs: a folder of MUSDB-like song folders, each with `mixture.<ext>` and one file
 * per stem (`vocals.wav`, `drums.flac`...), found up to two levels deep (the corpus groups its songs in folders).
 */

const AUDIO = new Set(['.wav', '.flac']);
/** MUSDB's own name for "everything but the vocals"; Soundry's catch-all stems are `other` and `remainder`. */
const CATCH_ALL = new Set(['other', REMAINDER_STEM]);

export interface Song {
  /** Path relative to the bench folder. */
  name: string;
  dir: string;
  mixture: string;
  /** stem name -> file */
  stems: Map<string, string>;
}

export function findSongs(root: string): Song[] {
  const songs: Song[] = [];
  const visit = (dir: string, depth: number) => {
    const files = readdirSync(dir).sort();
    const mixture = files.find((f) => basename(f, extname(f)) === 'mixture' && AUDIO.has(extname(f)));
    const stems = new Map<string, string>();
    for (const f of files) {
      const stem = basename(f, extname(f));
      if (AUDIO.has(extname(f)) && stem !== 'mixture' && statSync(join(dir, f)).isFile()) stems.set(stem, join(dir, f));
    }
    if (mixture && stems.size > 0) {
      songs.push({ name: relative(root, dir) || basename(dir), dir, mixture: join(dir, mixture), stems });
      return;
    }
    if (depth < 2) for (const f of files) if (statSync(join(dir, f)).isDirectory()) visit(join(dir, f), depth + 1);
  };
  if (existsSync(root)) visit(root, 0);
  return songs;
}

/**
 * How a model type's stems are scored on a song: a named stem against its own file; the catch-all stem (`other`,
 * `remainder`) against the sum of every stem file the model does not name (MUSDB's accompaniment = drums + bass +
 * other), but only when every stem the model names has a file, since a named stem missing here could hide in the
 * catch-all's reference. Stems with no reference are not scored.
 */
export function scorableStems(song: Song, modelType: number): Map<string, string[]> {
  const stems = outputStems(modelType);
  const named = stems.filter((s) => !CATCH_ALL.has(s));
  const out = new Map<string, string[]>();
  for (const s of named) if (song.stems.has(s)) out.set(s, [s]);
  const catchAll = stems.find((s) => CATCH_ALL.has(s));
  const rest = [...song.stems.keys()].filter((f) => !named.includes(f));
  if (catchAll && named.every((s) => song.stems.has(s)) && rest.length > 0) out.set(catchAll, rest);
  return out;
}

export async function loadAudio(path: string, rate: number, seconds?: number): Promise<AudioData> {
  const tools = resolveMediaTools({ preferSystem: true });
  const a = await decodeAudio(path, { ffmpeg: tools.ffmpeg, sampleRate: rate, channels: 2 });
  const n = seconds ? Math.min(a.channels[0]!.length, Math.round(seconds * rate)) : a.channels[0]!.length;
  return { sampleRate: rate, channels: a.channels.map((c) => c.slice(0, n)) };
}

/** Sum of stem files as one reference, cut to n samples. */
export function sumOf(parts: AudioData[], n: number): Float32Array[] {
  return [0, 1].map((ch) => {
    const out = new Float32Array(n);
    for (const p of parts) {
      const c = p.channels[ch]!;
      for (let i = 0; i < n; i++) out[i]! += c[i]!;
    }
    return out;
  });
}
