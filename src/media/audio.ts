import type { AudioData } from '../domain/audio.js';

export type { AudioData };

export function durationSeconds(audio: AudioData): number {
  const frames = audio.channels[0]?.length ?? 0;
  return audio.sampleRate > 0 ? frames / audio.sampleRate : 0;
}

/** The parts end to end (the part itself when there is one). */
export function concatSamples(parts: readonly Float32Array[]): Float32Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export function silence(sampleRate: number, seconds: number, channelCount = 1): AudioData {
  const frames = Math.max(0, Math.round(sampleRate * seconds));
  return { sampleRate, channels: Array.from({ length: channelCount }, () => new Float32Array(frames)) };
}
