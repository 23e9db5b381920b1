import type { AudioData } from '../domain/audio.js';

export type { AudioData };

export function durationSeconds(audio: AudioData): number {
  const frames = audio.channels[0]?.length ?? 0;
  return audio.sampleRate > 0 ? frames / audio.sampleRate : 0;
}

export function silence(sampleRate: number, seconds: number, channelCount = 1): AudioData {
  const frames = Math.max(0, Math.round(sampleRate * seconds));
  return { sampleRate, channels: Array.from({ length: channelCount }, () => new Float32Array(frames)) };
}
