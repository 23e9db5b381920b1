import { createMp3Encoder, type WasmMediaEncoder } from 'wasm-media-encoders';
import type { AudioData } from './audio.js';

/** The CBR rates LAME takes (wasm-media-encoders' Mp3CbrValues). */
const CBR_KBPS = [8, 16, 24, 32, 40, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320] as const;
type CbrKbps = (typeof CBR_KBPS)[number];
/** Samples handed to the encoder per call: bounded, so a long text never asks for one huge WASM buffer. */
const CHUNK = 16_384;

/**
 * MP3 encoding in this thread, with LAME compiled to WebAssembly (wasm-media-encoders): what ffmpeg's
 * libmp3lame did for TTS, without a process per file. Starting ffmpeg forks the whole Node process (3.5 ms
 * of the forking thread per file, by strace), and every fork leaves the process's pages copy-on-write, so
 * the event loop, which the API shares with the workers under ROLE=all, paid page faults for each TTS task.
 *
 * One per owner (an engine thread keeps one): the WASM module is compiled once, and the encoder is
 * configured again for each file.
 */
export class Mp3Encoder {
  private encoder: Promise<WasmMediaEncoder<'audio/mpeg'>> | null = null;

  /** CBR at the nearest LAME rate not above `kbps`; the audio's own sample rate (LAME's MPEG-1/2/2.5 rates). */
  async encode(audio: AudioData, kbps = 128): Promise<Buffer> {
    const channels = audio.channels.length;
    if (channels !== 1 && channels !== 2) throw new Error(`encodeMp3: ${channels} channels (1 or 2 only)`);
    this.encoder ??= createMp3Encoder();
    const encoder = await this.encoder;
    encoder.configure({ channels, sampleRate: audio.sampleRate, bitrate: cbr(kbps) });
    const frames = audio.channels[0]!.length;
    const parts: Buffer[] = [];
    // Each returned view points into the encoder's memory, reused by the next call: copied at once.
    for (let at = 0; at < frames; at += CHUNK) parts.push(Buffer.from(encoder.encode(audio.channels.map((c) => c.subarray(at, at + CHUNK)))));
    parts.push(Buffer.from(encoder.finalize()));
    return Buffer.concat(parts);
  }
}

function cbr(kbps: number): CbrKbps {
  return CBR_KBPS.reduce<CbrKbps>((best, rate) => (rate <= kbps ? rate : best), CBR_KBPS[0]);
}
