/** Markdown, plain text and caption files (WebVTT/SRT) given as text. */
import { cleanText } from './clean.js';

export function looksLikeMarkdown(text: string): boolean {
  const head = text.slice(0, 20_000);
  let score = 0;
  if (/^#{1,6}\s+\S/m.test(head)) score++;
  if (/\[[^\]]+\]\([^)]+\)/.test(head)) score++;
  if (/^\s*[-*+]\s+\S/m.test(head)) score++;
  if (/^```/m.test(head)) score++;
  if (/\*\*[^*]+\*\*/.test(head)) score++;
  return score >= 2;
}

export function looksLikeCaptions(text: string): boolean {
  const head = text.replace(/^\ufeff/, '').slice(0, 2000);
  return /^WEBVTT/.test(head) || /^\d+\s*\n\d{2}:\d{2}:\d{2}[,.]\d{3}\s*-->/m.test(head);
}

export function markdownToText(md: string): { title: string; text: string } {
  let s = md.replace(/\r\n?/g, '\n');
  let title = '';
  const front = /^---\n([\s\S]*?)\n---\n/.exec(s);
  if (front) {
    title = /^title:\s*["']?(.+?)["']?\s*$/m.exec(front[1]!)?.[1] ?? '';
    s = s.slice(front[0].length);
  }
  s = s
    .replace(/^```[\s\S]*?^```\s*$/gm, '') // code is not speakable
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(/!\[[^\]]*\]\([^)]*\)/g, '')
    .replace(/\[([^\]]+)\]\([^)]*\)/g, '$1')
    .replace(/\[([^\]]+)\]\[[^\]]*\]/g, '$1')
    .replace(/^\[[^\]]+\]:\s+\S+.*$/gm, '')
    .replace(/<[^>\n]+>/g, '')
    .replace(/^\s{0,3}>\s?/gm, '')
    .replace(/^\s*[-*+]\s+/gm, '')
    .replace(/^\s*\d+[.)]\s+/gm, '')
    .replace(/^\s*([-*_]\s*){3,}$/gm, '')
    .replace(/^\|?\s*:?-{2,}.*$/gm, '')
    .replace(/\|/g, ' ')
    .replace(/(\*\*|__)(.+?)\1/g, '$2')
    .replace(/(^|[^\w*])[*_]([^*_\n]+)[*_](?=[^\w*]|$)/g, '$1$2')
    .replace(/`([^`]+)`/g, '$1');
  const lines = s.split('\n').map((l) => {
    const h = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(l);
    if (h && !title) title = h[1]!;
    return h ? `\n${h[1]}\n` : l;
  });
  return { title, text: cleanText(lines.join('\n')) };
}

/** Cue text of WebVTT or SRT, cue timings and numbers dropped, rolling duplicates merged. */
export function captionsToText(vtt: string): string {
  const out: string[] = [];
  const blocks = vtt.replace(/\r\n?/g, '\n').replace(/^\ufeff/, '').split(/\n{2,}/);
  for (const block of blocks) {
    const lines = block.split('\n');
    const at = lines.findIndex((l) => l.includes('-->'));
    if (at < 0) continue;
    for (const l of lines.slice(at + 1)) {
      const t = l.replace(/<[^>]+>/g, '').replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>').trim();
      // Auto-generated captions repeat the previous line as they scroll.
      if (t && out[out.length - 1] !== t) out.push(t);
    }
  }
  return joinCaptionLines(out);
}

/** Caption fragments become flowing text, with a paragraph break every dozen sentences or so. */
export function joinCaptionLines(lines: string[]): string {
  const joined = lines.join(' ').replace(/\s+/g, ' ').trim();
  const sentences = joined.match(/[^.!?。！？]+[.!?。！？]+["”’)]*\s*|[^.!?。！？]+$/gu) ?? [joined];
  const paras: string[] = [];
  for (let i = 0; i < sentences.length; i += 12) paras.push(sentences.slice(i, i + 12).join('').trim());
  return cleanText(paras.join('\n\n'));
}

export function plainToText(text: string): { title: string; text: string } {
  // Speaker tags of transcripts (<Person1>…</Person1>) are markup, not words.
  const cleaned = cleanText(text.replace(/<\/?[A-Za-z][\w-]*>/g, '\n'));
  const first = cleaned.split('\n').find((l) => l.trim()) ?? '';
  const title = first.length <= 120 && !/[.!?。！？"”']$/.test(first) ? first : '';
  return { title, text: cleaned };
}
