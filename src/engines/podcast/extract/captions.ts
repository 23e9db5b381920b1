/**
 * Transcripts of video pages (source_type 2): YouTube-style caption tracks from ytInitialPlayerResponse
 * (timedtext XML, srv3 XML or JSON3) and <track kind="captions|subtitles"> WebVTT on plain pages.
 */
import { decodeEntities } from './clean.js';
import { parseDocument } from './html.js';
import { captionsToText, joinCaptionLines } from './plain.js';

export interface CaptionTrack {
  url: string;
  languageCode: string | null;
  /** 'asr' for automatic speech recognition tracks. */
  kind: string | null;
}

/** The JSON array starting at `from` (a '['), found by bracket matching that respects strings. */
function jsonArrayAt(s: string, from: number): unknown[] | null {
  let depth = 0;
  let inStr = false;
  for (let i = from; i < s.length; i++) {
    const c = s[i];
    if (inStr) {
      if (c === '\\') i++;
      else if (c === '"') inStr = false;
      continue;
    }
    if (c === '"') inStr = true;
    else if (c === '[' || c === '{') depth++;
    else if (c === ']' || c === '}') {
      depth--;
      if (depth === 0) {
        try {
          const v = JSON.parse(s.slice(from, i + 1)) as unknown;
          return Array.isArray(v) ? v : null;
        } catch {
          return null;
        }
      }
    }
  }
  return null;
}

export function findCaptionTracks(html: string, pageUrl: string): CaptionTrack[] {
  const tracks: CaptionTrack[] = [];
  for (const m of html.matchAll(/"captionTracks"\s*:\s*\[/g)) {
    const arr = jsonArrayAt(html, m.index! + m[0].length - 1) ?? [];
    for (const t of arr as Array<Record<string, unknown>>) {
      if (typeof t?.baseUrl !== 'string') continue;
      tracks.push({ url: resolve(t.baseUrl, pageUrl), languageCode: typeof t.languageCode === 'string' ? t.languageCode : null, kind: typeof t.kind === 'string' ? t.kind : null });
    }
    if (tracks.length) break;
  }
  const doc = parseDocument(html);
  for (const el of Array.from(doc.querySelectorAll('track[src]'))) {
    const kind = (el.getAttribute('kind') ?? 'subtitles').toLowerCase();
    if (kind !== 'captions' && kind !== 'subtitles') continue;
    tracks.push({ url: resolve(el.getAttribute('src')!, pageUrl), languageCode: el.getAttribute('srclang'), kind: 'vtt' });
  }
  // Human-made tracks before automatic ones.
  return tracks.filter((t) => t.url).sort((a, b) => Number(a.kind === 'asr') - Number(b.kind === 'asr'));
}

function resolve(href: string, base: string): string {
  try {
    return new URL(decodeEntities(href), base).href;
  } catch {
    return '';
  }
}

/** Transcript text of a caption document in any of the supported formats; '' when none. */
export function captionDocumentText(body: string): string {
  const trimmed = body.replace(/^\ufeff/, '').trimStart();
  if (trimmed.startsWith('{')) {
    try {
      const json = JSON.parse(trimmed) as { events?: Array<{ segs?: Array<{ utf8?: string }> }> };
      const lines = (json.events ?? []).map((e) => (e.segs ?? []).map((s) => s.utf8 ?? '').join('').trim()).filter((l) => l && l !== '\n');
      return joinCaptionLines(lines);
    } catch {
      return '';
    }
  }
  if (trimmed.startsWith('WEBVTT') || /-->/.test(trimmed.slice(0, 500))) return captionsToText(trimmed);
  // timedtext: <transcript><text start dur>…</text>; srv3: <timedtext><body><p t d>…</p>.
  const cues = [...trimmed.matchAll(/<(text|p)\b[^>]*>([\s\S]*?)<\/\1>/g)].map((m) =>
    decodeEntities(decodeEntities(m[2]!.replace(/<[^>]+>/g, ''))).replace(/\s+/g, ' ').trim(),
  );
  return joinCaptionLines(cues.filter(Boolean));
}

/** Title of a video page: videoDetails.title, og:title or <title>. */
export function videoTitle(html: string): string {
  const m = /"videoDetails"\s*:\s*\{[^{}]*?"title"\s*:\s*("(?:[^"\\]|\\.)*")/.exec(html);
  if (m) {
    try {
      return JSON.parse(m[1]!) as string;
    } catch {
      /* fall through */
    }
  }
  const doc = parseDocument(html);
  const og = doc.querySelector('meta[property="og:title"]')?.getAttribute('content');
  return (og || doc.querySelector('title')?.textContent || '').trim().replace(/\s*-\s*YouTube$/, '');
}
