/** Text normalisation shared by every format: whitespace, boilerplate lines, entity decoding, the size cap. */

const BOILERPLATE = [
  /^(share|share this|tweet|print|email|advertisement|advertisements?|sponsored|related( articles| stories)?|read more|see also|subscribe( now)?|sign up|log ?in|sign in|cookie(s| policy| settings)?|accept( all)?( cookies)?|skip to (main )?content|back to top|menu|navigation|follow us|all rights reserved.*|copyright.*|©.*|\d+ comments?)\.?$/i,
  /^(compartir|partager|teilen|werbung|anzeige|publicidade|publicidad|реклама|поделиться|広告|广告|分享|광고|공유)$/i,
];

const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', ndash: '–', mdash: '—', hellip: '…', rsquo: '’', lsquo: '‘', rdquo: '”', ldquo: '“' };

export function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e: string) => {
    if (e[0] === '#') {
      const cp = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return Number.isFinite(cp) && cp > 0 && cp < 0x110000 ? String.fromCodePoint(cp) : m;
    }
    return NAMED[e.toLowerCase()] ?? m;
  });
}

/**
 * Collapses whitespace inside lines, keeps paragraph breaks (one blank line), drops boilerplate lines
 * and exact repeats of short lines (menus and footers that repeat across a page or document).
 */
export function cleanText(raw: string): string {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const line0 of raw.replace(/\r\n?/g, '\n').replace(/[\u200b\u200e\u200f\ufeff\u00ad]/g, '').split('\n')) {
    const line = line0.replace(/[\t\f\v \u00a0\u3000]+/g, (m) => (m.includes('\u3000') && m.length === 1 ? '' : ' ')).trim();
    if (!line) {
      if (out.length && out[out.length - 1] !== '') out.push('');
      continue;
    }
    if (BOILERPLATE.some((re) => re.test(line))) continue;
    if (line.length < 80) {
      if (seen.has(line)) continue;
      seen.add(line);
    }
    out.push(line);
  }
  return out.join('\n').trim();
}

/** Cuts at a paragraph or sentence boundary at most maxChars long, so the tail is never half a sentence. */
export function capText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const head = text.slice(0, maxChars);
  const para = head.lastIndexOf('\n\n');
  if (para > maxChars * 0.8) return head.slice(0, para).trim();
  const m = /[\s\S]*[.!?。！？](?=\s|$)/u.exec(head);
  if (m && m[0].length > maxChars * 0.8) return m[0].trim();
  return head.trim();
}

/** Counts letters and digits: "is there any real text here" without caring about the script. */
export function letterCount(text: string): number {
  return (text.match(/[\p{L}\p{N}]/gu) ?? []).length;
}

const BLOCK = new Set([
  'P', 'DIV', 'SECTION', 'ARTICLE', 'MAIN', 'HEADER', 'FOOTER', 'ASIDE', 'NAV', 'BLOCKQUOTE', 'PRE', 'UL', 'OL', 'LI', 'DL', 'DT', 'DD',
  'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'TABLE', 'TR', 'TD', 'TH', 'FIGURE', 'FIGCAPTION', 'BR', 'HR', 'TITLE', 'BODY',
]);
const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'SVG', 'MATH', 'IFRAME', 'OBJECT', 'BUTTON', 'SELECT', 'INPUT', 'FORM']);

interface MiniNode {
  nodeType: number;
  nodeName: string;
  textContent: string | null;
  childNodes: ArrayLike<MiniNode>;
}

/** Text of a DOM subtree with paragraph breaks at block elements (textContent runs blocks together). */
export function domText(root: MiniNode): string {
  const parts: string[] = [];
  const walk = (n: MiniNode) => {
    if (n.nodeType === 3) {
      parts.push(n.textContent ?? '');
      return;
    }
    if (n.nodeType !== 1 && n.nodeType !== 9 && n.nodeType !== 11) return;
    const name = n.nodeName.toUpperCase();
    if (SKIP.has(name)) return;
    const block = BLOCK.has(name);
    if (block) parts.push('\u0001');
    for (let i = 0; i < n.childNodes.length; i++) walk(n.childNodes[i]!);
    if (block) parts.push('\u0001');
  };
  walk(root);
  // Inside blocks, source newlines are just whitespace; \u0001 marks block edges.
  return parts
    .join('')
    .replace(/\s+/g, ' ')
    .replace(/ *\u0001[\u0001 ]*/g, '\n\n')
    .trim();
}
