/**
 * The one in-memory audio type shared by engines, DSP and codecs: planar float32 PCM in [-1, 1].
 * Planar (one array per channel) because every DSP stage works per channel. It is vocabulary (ports
 * and engines speak it), so it lives here; src/media/audio.ts has the helpers.
 */
export interface AudioData {
  sampleRate: number;
  channels: Float32Array[];
}
