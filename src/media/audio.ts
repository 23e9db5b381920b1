/**
 * The one in-memory audio type shared by engines, DSP and codecs: planar float32 PCM in [-1, 1].
 * Planar (one array per channel) because every DSP stage works per channel.
 */
export interface AudioData {
  sampleRate: number;
  channels: Float32Array[];
}

export function durationSeconds(audio: AudioData): number {
  const frames = audio.channels[0]?.length ?? 0;
  return audio.sampleRate > 0 ? frames / audio.sampleRate : 0;
}

export function silence(sampleRate: number, seconds: number, channelCount = 1): AudioData {
  const frames = Math.max(0, Math.round(sampleRate * seconds));
  return { sampleRate, channels: Array.from({ length: channelCount }, () => new Float32Array(frames)) };
}
