import { AppError } from '../../domain/errors.js';
import { refusal } from '../envelope.js';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { BlobStore } from '../../ports/blob-store.js';
import type { VoiceLibrary, VoiceRecord } from '../../ports/voices.js';

/** A short greeting per language for voice samples (what a user hears before picking a host). */
const SAMPLE_TEXT: Record<string, string> = {
  en: 'Hi, welcome to the show. I will be your host today.',
  zh: '大家好，欢迎收听本期节目，我是今天的主持人。',
  zh_yue: '大家好，歡迎收聽今集節目，我係今日嘅主持人。',
  ar: 'مرحبا، أهلا بكم في البرنامج. سأكون مقدم الحلقة اليوم.',
  ru: 'Привет, добро пожаловать на наше шоу. Сегодня я буду вашим ведущим.',
  es: 'Hola, bienvenidos al programa. Hoy seré su presentador.',
  fr: "Bonjour, bienvenue dans l'émission. Je serai votre animateur aujourd'hui.",
  pt: 'Olá, bem-vindos ao programa. Hoje serei o vosso apresentador.',
  de: 'Hallo und willkommen zur Sendung. Ich bin heute Ihr Gastgeber.',
  ja: 'こんにちは、番組へようこそ。今日の司会を務めます。',
  ko: '안녕하세요, 프로그램에 오신 것을 환영합니다. 오늘의 진행자입니다.',
};

export function sampleTextFor(language: string): string {
  return SAMPLE_TEXT[language] ?? SAMPLE_TEXT.en!;
}

function escapeXml(s: string): string {
  return s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A deterministic avatar: initials on a colour derived from the voice's stable name. */
export function avatarSvg(voice: VoiceRecord): string {
  const hash = createHash('sha256').update(voice.name).digest();
  const hue = (hash[0]! * 360) / 256;
  const initials = voice.display_name
    .split(/\s+/)
    // Words that start with a letter: "English (US) Male 1" is "EM", not "E(".
    .filter((w) => /^\p{L}/u.test(w))
    .slice(0, 2)
    .map((w) => [...w][0]!.toUpperCase())
    .join('');
  return [
    '<svg xmlns="http://www.w3.org/2000/svg" width="256" height="256" viewBox="0 0 256 256">',
    `<rect width="256" height="256" rx="128" fill="hsl(${hue.toFixed(0)},55%,45%)"/>`,
    `<text x="128" y="128" dy="0.35em" text-anchor="middle" font-family="sans-serif" font-size="96" fill="#fff">${escapeXml(initials)}</text>`,
    '</svg>',
  ].join('');
}

export interface VoiceSampleRenderer {
  /** Writes a sample clip of `voice` (MP3) to `path`; never downloads a model (see the route). */
  render(voice: VoiceRecord, text: string, path: string): Promise<void>;
}

/**
 * Public, cacheable voice assets: `/assets/voices/<id>.svg` (avatar) and `/assets/voices/<id>.mp3`
 * (a sample clip, synthesized on first request and kept in the blob store). Public because voice
 * lists are shown to people choosing hosts; the set is bounded by the voice library.
 */
export function registerVoiceAssetRoutes(
  app: FastifyInstance,
  deps: { voices: VoiceLibrary; blobs: BlobStore; samples: VoiceSampleRenderer; tmpDir: string },
): void {
  const pending = new Map<string, Promise<void>>();
  app.get('/assets/voices/:file', { schema: { hide: true } }, async (request, reply) => {
    const m = /^(\d+)\.(svg|mp3)$/.exec((request.params as { file: string }).file);
    const voice = m ? await deps.voices.find(Number(m[1])) : null;
    if (!m || !voice) return reply.status(404).send(refusal(new AppError('NOT_FOUND', `Not Found: ${request.method} ${request.url.split('?')[0]!.slice(0, 200)}`)));
    if (m[2] === 'svg') return reply.header('cache-control', 'public, max-age=86400').type('image/svg+xml').send(avatarSvg(voice));
    // A neural voice not downloaded yet is never downloaded for a sample (this route is public): its built-in
    // stand-in (same language and gender) speaks it, flagged by a header, kept apart and cached briefly, so the
    // voice's own sample replaces it once a task has downloaded the model.
    const standIn = voice.downloaded === false;
    reply.header('cache-control', standIn ? 'public, max-age=300' : 'public, max-age=86400');
    if (standIn) reply.header('x-voice-sample', 'builtin-stand-in');
    const key = standIn ? `samples/voice-${voice.id}-builtin.mp3` : `samples/voice-${voice.id}.mp3`;
    if (!(await deps.blobs.stat(key))) {
      // One synthesis per sample even when many clients ask at once.
      let job = pending.get(key);
      if (!job) {
        job = (async () => {
          const dir = await mkdtemp(join(deps.tmpDir, 'sample-'));
          try {
            const file = join(dir, 'sample.mp3');
            await deps.samples.render(voice, sampleTextFor(voice.language), file);
            await deps.blobs.putFile(key, file, 'audio/mpeg');
          } finally {
            await rm(dir, { recursive: true, force: true });
          }
        })().finally(() => pending.delete(key));
        pending.set(key, job);
      }
      await job;
    }
    const info = await deps.blobs.stat(key);
    reply.type('audio/mpeg');
    if (info) reply.header('content-length', info.size);
    return reply.send(await deps.blobs.read(key));
  });
}
