import type { AudioData } from './audio.js';

/**
 * Minimal, exact RIFF/WAVE codec for in-process audio (engines that hand us WAV bytes, tests, ffmpeg pipes).
 * 16 bits = PCM int16, 32 bits = IEEE float32 (lossless for our float pipeline).
 */
export function encodeWav(audio: AudioData, bits: 16 | 32): Buffer {
  const channelCount = audio.channels.length;
  if (channelCount === 0) throw new Error('encodeWav: no channels');
  const frames = audio.channels[0]!.length;
  const bytesPerSample = bits / 8;
  const dataBytes = frames * channelCount * bytesPerSample;
  const buf = Buffer.alloc(44 + dataBytes);
  buf.write('RIFF', 0, 'ascii');
  buf.writeUInt32LE(36 + dataBytes, 4);
  buf.write('WAVE', 8, 'ascii');
  buf.write('fmt ', 12, 'ascii');
  buf.writeUInt32LE(16, 16);
  buf.writeUInt16LE(bits === 32 ? 3 : 1, 20); // 3 = IEEE float, 1 = PCM
  buf.writeUInt16LE(channelCount, 22);
  buf.writeUInt32LE(audio.sampleRate, 24);
  buf.writeUInt32LE(audio.sampleRate * channelCount * bytesPerSample, 28);
  buf.writeUInt16LE(channelCount * bytesPerSample, 32);
  buf.writeUInt16LE(bits, 34);
  buf.write('data', 36, 'ascii');
  buf.writeUInt32LE(dataBytes, 40);
  let offset = 44;
  for (let i = 0; i < frames; i++) {
    for (let c = 0; c < channelCount; c++) {
      const v = audio.channels[c]![i]!;
      if (bits === 32) {
        buf.writeFloatLE(v, offset);
      } else {
        // Same scale as decoding (x32768, clamped), so int16-representable values round-trip exactly.
        buf.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round(v * 32768))), offset);
      }
      offset += bytesPerSample;
    }
  }
  return buf;
}

const FORMAT_PCM = 1;
const FORMAT_FLOAT = 3;
const FORMAT_EXTENSIBLE = 0xfffe;

/**
 * Decodes PCM 8/16/24/32-bit and float 32/64-bit WAV (plain or WAVE_FORMAT_EXTENSIBLE).
 * A data chunk whose declared size is 0 or larger than the buffer (streamed WAV from a pipe)
 * is read to the end of the buffer.
 */
export function decodeWav(buf: Buffer): AudioData {
  if (buf.length < 12 || buf.toString('ascii', 0, 4) !== 'RIFF' || buf.toString('ascii', 8, 12) !== 'WAVE') {
    throw new Error('decodeWav: not a RIFF/WAVE file');
  }
  let format = -1;
  let channelCount = 0;
  let sampleRate = 0;
  let bits = 0;
  let offset = 12;
  while (offset + 8 <= buf.length) {
    const id = buf.toString('ascii', offset, offset + 4);
    const size = buf.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === 'fmt ') {
      format = buf.readUInt16LE(body);
      channelCount = buf.readUInt16LE(body + 2);
      sampleRate = buf.readUInt32LE(body + 4);
      bits = buf.readUInt16LE(body + 14);
      if (format === FORMAT_EXTENSIBLE && size >= 40) format = buf.readUInt16LE(body + 24); // sub-format GUID's first word
    } else if (id === 'data') {
      if (format < 0) throw new Error('decodeWav: data chunk before fmt chunk');
      const available = buf.length - body;
      const length = size === 0 || size > available ? available : size;
      return decodeSamples(buf.subarray(body, body + length), format, channelCount, sampleRate, bits);
    }
    offset = body + size + (size % 2); // chunks are word-aligned
  }
  throw new Error('decodeWav: no data chunk');
}

function decodeSamples(data: Buffer, format: number, channelCount: number, sampleRate: number, bits: number): AudioData {
  if (channelCount < 1 || sampleRate < 1) throw new Error('decodeWav: invalid fmt chunk');
  const bytes = bits / 8;
  const read = sampleReader(format, bits);
  const frames = Math.floor(data.length / (bytes * channelCount));
  const channels = Array.from({ length: channelCount }, () => new Float32Array(frames));
  let offset = 0;
  for (let i = 0; i < frames; i++) {
    for (let c = 0; c < channelCount; c++) {
      channels[c]![i] = read(data, offset);
      offset += bytes;
    }
  }
  return { sampleRate, channels };
}

function sampleReader(format: number, bits: number): (b: Buffer, o: number) => number {
  if (format === FORMAT_FLOAT && bits === 32) return (b, o) => b.readFloatLE(o);
  if (format === FORMAT_FLOAT && bits === 64) return (b, o) => b.readDoubleLE(o);
  if (format === FORMAT_PCM) {
    if (bits === 8) return (b, o) => (b[o]! - 128) / 128;
    if (bits === 16) return (b, o) => b.readInt16LE(o) / 32768;
    if (bits === 24) return (b, o) => b.readIntLE(o, 3) / 8388608;
    if (bits === 32) return (b, o) => b.readInt32LE(o) / 2147483648;
  }
  throw new Error(`decodeWav: unsupported format ${format} with ${bits} bits`);
}
