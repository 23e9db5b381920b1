/**
 * Turns a downloaded podcast source (web page, document, feed, text) into clean text with a title and
 * language, and finds transcripts of video pages. Everything is local: the only network access is the
 * injected, SSRF-guarded fetchText used for caption tracks.
 */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { TaskFailure } from '../../domain/errors.js';
import { sniffPlaylist, utf16Encoding, type SniffedType } from '../../media/sniff.js';
import { findCaptionTracks, captionDocumentText, videoTitle } from './extract/captions.js';
import { capText, letterCount } from './extract/clean.js';
import { extractFeed, looksLikeFeed } from './extract/feed.js';
import { decodeHtml, extractHtml, firstLine } from './extract/html.js';
import { detectLanguage, languageFromTag } from './extract/language.js';
import { extractDocx, extractEpub, extractPptx, extractXlsx } from './extract/office.js';
import { extractPdf } from './extract/pdf.js';
import { captionsToText, looksLikeCaptions, looksLikeMarkdown, markdownToText, plainToText } from './extract/plain.js';

export { detectLanguage } from './extract/language.js';

export interface ExtractedSource {
  title: string;
  text: string;
  /** A spec podcast language key, or null when the language is not one of them or unknown. */
  language: string | null;
  kind: 'html' | 'pdf' | 'docx' | 'pptx' | 'epub' | 'markdown' | 'text' | 'rss' | 'captions' | 'transcript';
}

export interface SourceFile {
  path: string;
  sniffed: SniffedType;
  contentType: string | null;
  url: string | null;
}

export interface ExtractOptions {
  /** Characters of text kept (cut at a paragraph or sentence boundary). Default 200,000 (~30k words). */
  maxChars?: number;
  /** Below this many letters the source counts as empty. Default 40. */
  minLetters?: number;
}

export const DEFAULT_MAX_SOURCE_CHARS = 200_000;

type Kind = ExtractedSource['kind'] | 'xlsx';

export async function extractSource(file: SourceFile, opts: ExtractOptions = {}): Promise<ExtractedSource> {
  const raw = await readFile(file.path);
  // Text the sniffer found in UTF-16 (with its byte-order mark) is read as the UTF-8 every reader below expects.
  const encoding = file.sniffed.kind === 'text' ? utf16Encoding(raw) : null;
  const bytes = encoding ? Buffer.from(new TextDecoder(encoding).decode(raw), 'utf8') : raw;
  const kind = classify(bytes, file);
  let title = '';
  let text = '';
  let langHint: string | null = null;
  switch (kind) {
    case 'html': {
      const r = extractHtml(decodeHtml(bytes, file.contentType));
      ({ title, text } = r);
      langHint = r.langTag;
      break;
    }
    case 'pdf':
      ({ title, text } = await extractPdf(bytes));
      break;
    case 'docx':
    case 'pptx':
    case 'epub':
    case 'xlsx': {
      const r = await (kind === 'docx' ? extractDocx : kind === 'pptx' ? extractPptx : kind === 'epub' ? extractEpub : extractXlsx)(bytes);
      ({ title, text } = r);
      langHint = languageFromTag(r.langTag);
      break;
    }
    case 'rss': {
      const r = extractFeed(bytes.toString('utf8'));
      ({ title, text } = r);
      langHint = languageFromTag(r.language);
      break;
    }
    case 'captions':
      text = captionsToText(bytes.toString('utf8'));
      break;
    case 'markdown':
      ({ title, text } = markdownToText(bytes.toString('utf8')));
      break;
    case 'text':
      ({ title, text } = plainToText(bytes.toString('utf8')));
      break;
  }
  if (letterCount(text) < (opts.minLetters ?? 40)) throw new TaskFailure(emptyMessage(kind));
  text = capText(text, opts.maxChars ?? DEFAULT_MAX_SOURCE_CHARS);
  if (!title) title = fileTitle(file.url) ?? firstLine(text);
  // The text decides the language; a declared tag only breaks ties where detection has no answer.
  const language = detectLanguage(text) ?? langHint;
  return { title: title.replace(/[ \t\r\n\u00a0]+/g, ' ').trim(), text, language, kind: kind === 'xlsx' ? 'text' : kind };
}

const PLAYLIST_EXTENSIONS = new Set(['.m3u', '.m3u8', '.pls', '.xspf', '.asx', '.wax', '.wvx', '.wpl', '.ffconcat', '.ram']);
const PLAYLIST_TYPES = /mpegurl|x-scpls|pls\+xml|xspf\+xml|x-ms-wax|x-ms-wvx|x-pn-realaudio\b|x-ms-wpl/;

/**
 * Refuses a playlist (M3U/HLS, PLS, XSPF, ASX, WPL, ffconcat, RAM): a list of other files or streams, which
 * would otherwise be read as text and become an episode about "#EXTM3U". Known by its content, or for a
 * text file by its extension or declared type (a plain M3U is only a list of paths).
 */
export function refusePlaylist(file: SourceFile, bytes?: Buffer): void {
  const { kind, format } = file.sniffed;
  const ext = extname(urlPath(file.url) ?? file.path).toLowerCase();
  const ct = (file.contentType ?? '').toLowerCase();
  // Binary kinds (PDF, audio, a zip) are what they are, whatever the URL says.
  if (kind !== 'playlist' && kind !== 'text' && kind !== 'unknown') return;
  let found: string | null = kind === 'playlist' ? (format ?? 'playlist') : bytes ? sniffPlaylist(bytes) : null;
  if (!found && PLAYLIST_EXTENSIONS.has(ext)) found = ext.slice(1);
  if (!found && PLAYLIST_TYPES.test(ct)) found = 'playlist';
  if (found) throw playlistRefusal(found);
}

/** The failure for a playlist source; `found`: its format, or 'playlist' when known by its content type. */
export function playlistRefusal(found: string): TaskFailure {
  return new TaskFailure(
    `The source is a playlist (${found === 'playlist' ? 'by its content type' : found.toUpperCase()}): a list of other files or streams, which is not read. Give a page, a document or a media file`,
  );
}

function classify(bytes: Buffer, file: SourceFile): Kind {
  const ext = extname(urlPath(file.url) ?? file.path).toLowerCase();
  const ct = (file.contentType ?? '').toLowerCase();
  const { kind, format } = file.sniffed;
  refusePlaylist(file, bytes);
  if (kind === 'pdf') return 'pdf';
  if (kind === 'zip') {
    if (format === 'docx' || format === 'pptx' || format === 'epub' || format === 'xlsx') return format;
    if (ext === '.docx' || ext === '.pptx' || ext === '.epub' || ext === '.xlsx') return ext.slice(1) as Kind;
    throw new TaskFailure('Unsupported attachment: zip archives other than DOCX, PPTX, XLSX and EPUB are not accepted');
  }
  if (kind === 'audio' || kind === 'video') throw new TaskFailure('The source is an audio or video file, not a web page or document');
  // The sniffer reads text as UTF-8 only: a page in Shift_JIS, GBK, EUC-KR or windows-1251 lands here.
  if (kind === 'unknown' && isLegacyHtml(bytes, ct)) return 'html';
  if (kind === 'unknown') throw new TaskFailure('Unsupported source format: expected a web page, PDF, Office document, EPUB, feed or text');
  const head = bytes.toString('utf8', 0, Math.min(bytes.length, 4096));
  if (looksLikeFeed(head) || /(rss|atom)\+xml/.test(ct)) return 'rss';
  if (kind === 'html') return 'html';
  if (ct.includes('text/vtt') || ext === '.vtt' || ext === '.srt' || looksLikeCaptions(head)) return 'captions';
  if (ct.includes('html') || HTML_START.test(withoutProlog(head))) return 'html';
  if (ct.includes('markdown') || ext === '.md' || ext === '.markdown') return 'markdown';
  if (format === 'plain' && looksLikeMarkdown(bytes.toString('utf8', 0, 20_000))) return 'markdown';
  return 'text';
}

const HTML_START = /^<(!doctype html|html[\s>]|head[\s>]|body[\s>])/i;

/** XHTML pages open with an XML declaration, comments or a doctype before <html>. */
function withoutProlog(head: string): string {
  return head
    .replace(/^\ufeff/, '')
    .replace(/^\s*(<\?[\s\S]*?\?>|<!--[\s\S]*?-->|\s)*/, '')
    .trimStart();
}

/**
 * A page in a legacy encoding: no NUL or other binary control bytes, and HTML once read byte by byte
 * (every such charset keeps ASCII markup as ASCII).
 */
function isLegacyHtml(bytes: Buffer, ct: string): boolean {
  const head = bytes.subarray(0, 4096);
  // ESC (0x1b) is allowed: ISO-2022-JP switches character sets with it.
  if (head.some((b) => b < 0x09 || (b > 0x0d && b < 0x20 && b !== 0x1b))) return false;
  return ct.includes('html') || HTML_START.test(withoutProlog(head.toString('latin1')));
}

function emptyMessage(kind: Kind): string {
  switch (kind) {
    case 'html':
      return 'The page has no readable article text';
    case 'pdf':
      return 'The PDF has no extractable text (it may be a scanned image)';
    case 'rss':
      return 'The feed has no items with readable text';
    case 'captions':
      return 'The caption file has no text';
    default:
      return `The ${kind === 'text' || kind === 'markdown' ? 'text' : 'document'} has no usable text`;
  }
}

function urlPath(url: string | null): string | null {
  if (!url) return null;
  try {
    return new URL(url).pathname;
  } catch {
    return null;
  }
}

function fileTitle(url: string | null): string | null {
  const p = urlPath(url);
  const base = p ? decodeURIComponent(p.split('/').pop() ?? '') : '';
  const stem = base.replace(/\.[a-z0-9]{1,5}$/i, '').replace(/[-_]+/g, ' ').trim();
  return stem.length >= 3 ? stem : null;
}

/**
 * Transcript of a video page: the first usable caption track (human before automatic). Returns null
 * when the page exposes no track or none yields text; the caller then fails the task.
 */
export async function extractVideoCaptions(
  htmlPath: string,
  pageUrl: string,
  fetchText: (url: string) => Promise<string>,
  opts: ExtractOptions = {},
): Promise<ExtractedSource | null> {
  const html = decodeHtml(await readFile(htmlPath), null);
  const tracks = findCaptionTracks(html, pageUrl);
  for (const track of tracks.slice(0, 4)) {
    let body: string;
    try {
      body = await fetchText(track.url);
    } catch {
      continue; // a dead track should not hide a working one
    }
    // A track that is a playlist (HLS of caption segments) lists other files: not text to read.
    if (sniffPlaylist(Buffer.from(body.slice(0, 4096), 'utf8'))) continue;
    const text = captionDocumentText(body);
    if (letterCount(text) < (opts.minLetters ?? 40)) continue;
    const capped = capText(text, opts.maxChars ?? DEFAULT_MAX_SOURCE_CHARS);
    return {
      title: videoTitle(html) || firstLine(capped),
      text: capped,
      language: detectLanguage(capped) ?? languageFromTag(track.languageCode),
      kind: 'captions',
    };
  }
  return null;
}

/**
 * A speech-recognition transcript of an audio/video source as a podcast source: titled after the
 * file name in the URL (a media file has no page title), language from the recogniser's detection
 * when it is a podcast language, else from the text.
 */
export function transcriptSource(text: string, recognisedLanguage: string | null, url: string | null, opts: ExtractOptions = {}): ExtractedSource {
  if (letterCount(text) < (opts.minLetters ?? 40)) throw new TaskFailure('The recording has no recognisable speech to build a script from');
  const capped = capText(text, opts.maxChars ?? DEFAULT_MAX_SOURCE_CHARS);
  const title = fileTitle(url) ?? firstLine(capped);
  const language = languageFromTag(recognisedLanguage) ?? detectLanguage(capped);
  return { title: title.replace(/[ \t\r\n\u00a0]+/g, ' ').trim(), text: capped, language, kind: 'transcript' };
}
