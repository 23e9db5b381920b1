/**
 * Speech recognition models (Whisper, ONNX) for podcast sources that are audio or video files. Each
 * entry's name is its folder under MODELS_DIR, which src/engines/asr/whisper.ts looks for; files keep
 * the Hub's layout (onnx/...) so a folder cloned from the Hub works the same.
 *
 * whisper-tiny: Xenova/whisper-tiny (the Transformers.js export of openai/whisper-tiny, Apache-2.0)
 * pinned to revision 5332fcc35e32a33b86612b9a57a89be7906102b1. The 8-bit quantized encoder and merged
 * decoder are used: the full-precision pair is ~145 MB against ~41 MB, and quality on speech stays close.
 * The sha256 and sizes were published for that revision in public projects that pin it (an ADR listing
 * every file's SHA-256 and bytes, and a manifest that independently gives the same decoder and
 * tokenizer.json digests); the downloader verifies them, so a wrong value fails loudly, never silently.
 *
 * whisper-base is left out: no public source for its files' checksums at a pinned revision was found,
 * and a guessed checksum would be worse than none. An operator can still place a Hub copy of
 * Xenova/whisper-base (or onnx-community/whisper-base) in MODELS_DIR/whisper-base; the engine prefers it.
 */
import type { OtherModelEntry } from './catalog.js';

const TINY = { repo: 'Xenova/whisper-tiny', revision: '5332fcc35e32a33b86612b9a57a89be7906102b1' };

function hub(repo: string, revision: string, path: string): string {
  return `https://huggingface.co/${repo}/resolve/${revision}/${path}`;
}

export const ASR_MODELS: readonly OtherModelEntry[] = [
  {
    name: 'whisper-tiny',
    kind: 'asr',
    description: 'Whisper tiny, multilingual speech recognition (8-bit ONNX); transcribes audio/video podcast sources',
    license: 'Apache-2.0',
    meta: { engine: 'whisper', sampleRate: 16000, source: `huggingface ${TINY.repo}@${TINY.revision}` },
    files: [
      {
        path: 'onnx/encoder_model_quantized.onnx',
        url: hub(TINY.repo, TINY.revision, 'onnx/encoder_model_quantized.onnx'),
        sizeBytes: 10124910,
        sha256: 'fd9d995b9dcb0520f0dbf6cf68651af639fc385f594d9d876e69ca2802dc438e',
      },
      {
        path: 'onnx/decoder_model_merged_quantized.onnx',
        url: hub(TINY.repo, TINY.revision, 'onnx/decoder_model_merged_quantized.onnx'),
        sizeBytes: 30727765,
        sha256: '6c0c125986b007d2e3734bec84c18bda0152071b90b87fadac6d7764499927a0',
      },
      {
        path: 'tokenizer.json',
        url: hub(TINY.repo, TINY.revision, 'tokenizer.json'),
        sizeBytes: 2480466,
        sha256: '27fc476bfe7f17299480be2273fc0608e4d5a99aba2ab5dec5374b4482d1a566',
      },
      {
        path: 'generation_config.json',
        url: hub(TINY.repo, TINY.revision, 'generation_config.json'),
        sizeBytes: 3716,
        sha256: '68ac791fcb4999461a313472125042934656240ba1cba7d1c2627fcbb19ac24c',
      },
      {
        path: 'config.json',
        url: hub(TINY.repo, TINY.revision, 'config.json'),
        sizeBytes: 2248,
        sha256: '2b2e4e519084e0ea028b19b153f95202735a971870d6844aa26e559edd292e94',
      },
    ],
  },
];
