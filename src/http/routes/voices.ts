import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { AppError, ERRORS } from '../../domain/errors.js';
import { hostNames } from '../../domain/podcast-hosts.js';
import type { VoiceLibrary, VoiceRecord } from '../../ports/voices.js';
import type { RequestLimits } from '../../ports/limits.js';
import type { AuthService } from '../../services/auth.js';
import { apiKeyOf, requireApiKey } from '../auth-hooks.js';
import { success } from '../envelope.js';
import { Envelope, VoiceListQuery } from '../schemas.js';
import { isPodcastLanguage } from '../../domain/vocabulary.js';

const BASE = '/audio/api/v1/api-keys';
const GENDER_TEXT: Record<number, string> = { 1: 'Male', 2: 'Female' };
const AGE_TEXT: Record<number, string> = { 1: 'Child', 2: 'Young', 3: 'Adult', 4: 'Senior' };

function page<T>(records: T[], q: { page: number; page_size: number }) {
  const start = (q.page - 1) * q.page_size;
  return { total: records.length, page: q.page, page_size: q.page_size, records: records.slice(start, start + q.page_size) };
}

function filter(voices: VoiceRecord[], q: { language?: string; gender?: number }): VoiceRecord[] {
  return voices.filter(
    (v) => (!q.language || q.language === 'all' || v.language === q.language) && (q.gender === undefined || v.gender === q.gender),
  );
}

export function registerVoiceRoutes(
  app: FastifyInstance,
  deps: { auth: AuthService; voices: VoiceLibrary; limits: RequestLimits; publicBaseUrl: string },
): void {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.get(`${BASE}/tts/voices`, {
    schema: { operationId: 'listTtsVoices', tags: ['Text to speech'], summary: 'TTS voice library (filters: language, gender; paging)', querystring: VoiceListQuery, response: { 200: Envelope } },
    onRequest: requireApiKey(deps.auth, deps.limits, 'list'),
    handler: async (request) => success(page(filter(await deps.voices.list(), request.query), request.query)),
  });
  r.get(`${BASE}/podcast/voices`, {
    schema: { operationId: 'listPodcastVoices', tags: ['Podcast'], summary: `Podcast voice resources (${ERRORS.NEED_LOGIN.code} without a valid key)`, querystring: VoiceListQuery, response: { 200: Envelope } },
    onRequest: async (request: FastifyRequest) => {
      try {
        // The spec gives this list only 100000 and 100001: no rate or concurrency refusal (it is static data).
        await deps.auth.authenticate(apiKeyOf(request), 'login', request.ip);
      } catch (err) {
        if (err instanceof AppError && err.errorName === 'INVALID_API_KEY') throw new AppError('NEED_LOGIN');
        throw err;
      }
    },
    handler: async (request) => {
      const all = await deps.voices.list();
      // Names over the whole list, so a voice keeps its host name whatever the filter.
      const hosts = hostNames(all.filter((v) => isPodcastLanguage(v.language)));
      const voices = filter(all, request.query).filter((v) =>
        isPodcastLanguage(v.language),
      );
      const records = voices.map((v) => ({
        id: v.id,
        gender: v.gender,
        gender_text: GENDER_TEXT[v.gender] ?? '',
        language: v.language,
        age: v.age,
        age_text: AGE_TEXT[v.age] ?? '',
        emotion: v.emotion,
        image: `${deps.publicBaseUrl}/assets/voices/${v.id}.svg`,
        audio: `${deps.publicBaseUrl}/assets/voices/${v.id}.mp3`,
        voice_id: String(v.id),
        // The voice's description stays findable as a tag; display_name is the host name the scripts use.
        tags: [v.language, GENDER_TEXT[v.gender] ?? '', AGE_TEXT[v.age] ?? '', v.display_name].filter(Boolean),
        name: v.name,
        display_name: hosts.get(v.id) ?? v.display_name,
      }));
      return success(page(records, request.query));
    },
  });
}
