/** Content sniffing: the first bytes decide what we got; a server's Content-Type is never trusted. */

/** `playlist`: a list of other files or streams (M3U/HLS, PLS, XSPF, ASX, WPL, ffconcat), never content itself. */
export type SniffedKind = 'audio' | 'video' | 'html' | 'pdf' | 'zip' | 'text' | 'playlist' | 'unknown';
export interface SniffedType {
  kind: SniffedKind;
  /** e.g. 'mp3', 'wav', 'm4a', 'webm', 'docx'; null when nothing more specific is known. */
  format: string | null;
}

const ASF_GUID = Buffer.from('3026b2758e66cf11a6d900aa0062ce6c', 'hex');
const EBML_MAGIC = Buffer.from('1a45dfa3', 'hex');
const M4A_BRANDS = new Set(['M4A ', 'M4B ', 'M4P ', 'F4A ', 'F4B ']);
const M4V_BRANDS = new Set(['M4V ', 'M4VH', 'M4VP', 'F4V ', 'F4P ']);
const IMAGE_BRANDS = new Set(['heic', 'heix', 'mif1', 'msf1', 'avif', 'avis']);
// WHATWG mime-sniff "HTML" patterns: each must be followed by a space or '>'.
const HTML_TAGS = ['!doctype html', 'html', 'head', 'script', 'iframe', 'h1', 'div', 'font', 'table', 'a', 'style', 'title', 'b', 'body', 'br', 'p'];

const kindOf = (kind: SniffedKind, format: string | null = null): SniffedType => ({ kind, format });

export function sniffMediaType(b: Buffer): SniffedType {
  const at = (off: number, s: string) => b.length >= off + s.length && b.toString('latin1', off, off + s.length) === s;
  if (at(0, 'ID3')) return kindOf('audio', 'mp3');
  if (at(0, 'RIFF') || at(0, 'RF64') || at(0, 'BW64')) {
    if (at(8, 'WAVE')) return kindOf('audio', 'wav');
    if (at(8, 'AVI ')) return kindOf('video', 'avi');
  }
  if (at(0, 'fLaC')) return kindOf('audio', 'flac');
  if (at(0, 'OggS')) {
    if (at(28, 'OpusHead')) return kindOf('audio', 'opus');
    if (at(29, 'theora')) return kindOf('video', 'ogv');
    if (at(28, '\x7fFLAC')) return kindOf('audio', 'flac');
    if (at(28, 'Speex   ')) return kindOf('audio', 'speex');
    return kindOf('audio', 'ogg');
  }
  if (at(4, 'ftyp')) return sniffFtyp(b);
  if (b.subarray(0, 4).equals(EBML_MAGIC)) {
    const head = b.toString('latin1', 0, 64);
    return kindOf('video', head.includes('webm') ? 'webm' : 'mkv');
  }
  if (at(0, 'FORM') && (at(8, 'AIFF') || at(8, 'AIFC'))) return kindOf('audio', 'aiff');
  if (b.subarray(0, 16).equals(ASF_GUID)) return kindOf('audio', 'wma');
  if (at(0, '#!AMR-WB\n')) return kindOf('audio', 'amr-wb');
  if (at(0, '#!AMR\n')) return kindOf('audio', 'amr');
  if (at(0, 'caff')) return kindOf('audio', 'caf');
  const audio = audioMagic(b, at);
  if (audio) return kindOf('audio', audio);
  if (at(0, 'FLV\x01')) return kindOf(((b[4] ?? 0) & 0x01) === 0 ? 'audio' : 'video', 'flv');
  if (at(0, '.RMF')) return kindOf('video', 'rm');
  if (at(0, '\x00\x00\x01\xba')) return kindOf('video', 'mpeg');
  if (isMpegTs(b)) return kindOf('video', 'mpegts');
  if (at(0, '%PDF-')) return kindOf('pdf', 'pdf');
  if (at(0, 'PK\x03\x04') || at(0, 'PK\x05\x06')) return sniffZip(b);
  // Before the frame syncs: a UTF-16 byte-order mark (FF FE) reads as a valid MPEG audio frame header.
  const utf16 = utf16Text(b);
  if (utf16) return utf16;
  if (isAdts(b)) return kindOf('audio', 'aac');
  if (isMpegAudioFrame(b)) return kindOf('audio', 'mp3');
  return sniffText(b);
}

/**
 * Audio formats known by a fixed signature at the start, beyond the common ones above: what speech corpora and
 * studios hand over, and what ffmpeg reads (src/media/ffmpeg.ts INPUT_FORMATS). Each needs bytes no text file starts
 * with (control characters, or a signature followed by them), so a document is never taken for audio.
 */
function audioMagic(b: Buffer, at: (off: number, s: string) => boolean): string | null {
  if (at(0, 'NIST_1A\n')) return 'sph'; // NIST SPHERE: a 1024-byte text header, then PCM, mu-law or Shorten
  if (at(0, 'riff') && at(24, 'wave')) return 'w64'; // Sony Wave64: GUID chunk ids whose first four bytes spell these
  if ((at(0, '.snd') && b[4] === 0) || (at(0, 'dns.') && b[7] === 0)) return 'au'; // header size, a small 32-bit number
  if (at(0, 'Creative Voice File\x1a')) return 'voc';
  if (at(0, '.SoX') || at(0, 'XoS.')) return 'sox';
  if (at(0, 'DSD ') && b[4] === 28 && b[5] === 0) return 'dsf'; // the DSD chunk's size, 28, as 64-bit little-endian
  if (at(0, 'ajkg') && (b[4] ?? 0) >= 1 && (b[4] ?? 0) <= 3) return 'shn'; // Shorten versions 1-3
  if (at(0, 'wvpk')) return 'wv';
  if (at(0, 'TTA1') && b[5] === 0) return 'tta'; // format 1 or 2, 16-bit little-endian
  if (at(0, 'MAC ') && (b[5] ?? 0xff) < 0x20) return 'ape'; // version (3800-3990...), 16-bit little-endian
  if (at(0, 'MPCK') || (at(0, 'MP+') && ((b[3] ?? 0) & 0x0f) === 7)) return 'mpc';
  if (at(0, '.ra\xfd')) return 'ra';
  if (b.length >= 8 && b[4] === 0xf8 && b[5] === 0x72 && b[6] === 0x6f && (b[7] === 0xba || b[7] === 0xbb)) return b[7] === 0xba ? 'truehd' : 'mlp';
  const be32 = b.length >= 4 ? b.readUInt32BE(0) : 0;
  // DTS core sync words: 16-bit big-endian, little-endian, and the 14-bit packings.
  if ([0x7ffe8001, 0xfe7f0180, 0x1fffe800, 0xff1f00e8].includes(be32)) return 'dts';
  // IRCAM / BICSF: four magic words, either byte order.
  if ([1, 2, 3, 4].some((v) => be32 === (0x64a30000 | (v << 8)) || be32 === (0x0000a364 | (v << 16)))) return 'ircam';
  // AC-3 / E-AC-3 sync word; bsid (byte 5, top 5 bits) above 10 is E-AC-3.
  if (b.length >= 6 && b[0] === 0x0b && b[1] === 0x77) return b[5]! >> 3 > 10 ? 'eac3' : 'ac3';
  return null;
}

/**
 * MPEG transport stream (broadcast recordings, `.ts`, `.m2ts`): a 0x47 sync byte at the start of every 188-byte packet
 * (192 with M2TS's 4-byte timestamp first). Three packets in a row are asked for, so that text starting with "G" is not one.
 */
function isMpegTs(b: Buffer): boolean {
  const syncs = (first: number, size: number) => b.length >= first + 2 * size + 1 && [0, 1, 2].every((i) => b[first + i * size] === 0x47);
  return syncs(0, 188) || syncs(4, 192);
}

function sniffFtyp(b: Buffer): SniffedType {
  const major = b.toString('latin1', 8, 12);
  const boxEnd = Math.min(b.length, b.readUInt32BE(0));
  const compatible: string[] = [];
  for (let off = 16; off + 4 <= boxEnd; off += 4) compatible.push(b.toString('latin1', off, off + 4));
  if (M4A_BRANDS.has(major)) return kindOf('audio', 'm4a');
  if (IMAGE_BRANDS.has(major)) return kindOf('unknown', 'heif');
  if (major === 'qt  ') return kindOf('video', 'mov');
  if (major.startsWith('3g')) return kindOf('video', '3gp');
  if (!M4V_BRANDS.has(major) && compatible.some((c) => M4A_BRANDS.has(c))) return kindOf('audio', 'm4a');
  return kindOf('video', 'mp4');
}

function sniffZip(b: Buffer): SniffedType {
  const head = b.toString('latin1');
  // EPUB's first entry is an uncompressed "mimetype" file; OOXML names its parts early on.
  if (head.startsWith('mimetype', 30) && head.includes('application/epub+zip')) return kindOf('zip', 'epub');
  if (head.includes('word/')) return kindOf('zip', 'docx');
  if (head.includes('ppt/')) return kindOf('zip', 'pptx');
  if (head.includes('xl/')) return kindOf('zip', 'xlsx');
  if (head.includes('[Content_Types].xml')) return kindOf('zip', 'ooxml');
  return kindOf('zip', 'zip');
}

function isAdts(b: Buffer): boolean {
  // 12-bit sync, layer 00, valid sampling-frequency index.
  return b.length >= 7 && b[0] === 0xff && (b[1]! & 0xf6) === 0xf0 && ((b[2]! >> 2) & 0x0f) < 13;
}

function isMpegAudioFrame(b: Buffer): boolean {
  if (b.length < 4 || b[0] !== 0xff || (b[1]! & 0xe0) !== 0xe0) return false;
  const version = (b[1]! >> 3) & 3;
  const layer = (b[1]! >> 1) & 3;
  const bitrate = b[2]! >> 4;
  const sampleRate = (b[2]! >> 2) & 3;
  return version !== 1 && layer !== 0 && bitrate !== 0x0f && sampleRate !== 3;
}

function sniffText(b: Buffer): SniffedType {
  if (b.length === 0) return kindOf('unknown');
  let text: string;
  try {
    // stream:true so a code point cut at the sniff window's end is not an error.
    text = new TextDecoder('utf-8', { fatal: true }).decode(b, { stream: true });
  } catch {
    return kindOf('unknown');
  }
  if (/[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]/.test(text)) return kindOf('unknown');
  const start = text.replace(/^\ufeff/, '').trimStart().toLowerCase();
  const playlist = playlistFormat(start);
  if (playlist) return kindOf('playlist', playlist);
  if (start.startsWith('<!--')) return kindOf('html', 'html');
  for (const tag of HTML_TAGS) {
    if (start.startsWith(`<${tag}`)) {
      const next = start.charAt(tag.length + 1);
      if (next === '>' || /\s/.test(next)) return kindOf('html', 'html');
    }
  }
  if (start.startsWith('<?xml')) return kindOf('text', start.includes('<svg') ? 'svg' : 'xml');
  return kindOf('text', 'plain');
}

/** The UTF-16 encoding a byte-order mark names, or null. */
export function utf16Encoding(b: Uint8Array): 'utf-16le' | 'utf-16be' | null {
  return b[0] === 0xff && b[1] === 0xfe ? 'utf-16le' : b[0] === 0xfe && b[1] === 0xff ? 'utf-16be' : null;
}

/**
 * Text saved as UTF-16 with its byte-order mark (Windows Notepad's "Unicode"), sniffed as its UTF-8 equivalent would
 * be (text, a playlist, a page): it was taken for an MP3, since FF FE reads as an MPEG frame header, and sent to speech
 * recognition. Null when there is no such mark or what follows is not clean text (then it is media after all).
 */
function utf16Text(b: Buffer): SniffedType | null {
  const encoding = utf16Encoding(b);
  if (!encoding) return null;
  let text: string;
  try {
    text = new TextDecoder(encoding, { fatal: true }).decode(b.subarray(2, 4096), { stream: true });
  } catch {
    return null;
  }
  if (text.length === 0 || /[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]/.test(text)) return null;
  return sniffText(Buffer.from(text, 'utf8'));
}

/** The playlist format of a file's first bytes in any ASCII-compatible encoding, or null (see playlistFormat). */
export function sniffPlaylist(b: Buffer): string | null {
  return playlistFormat(b.toString('latin1', 0, Math.min(b.length, 4096)).replace(/^\u00ef\u00bb\u00bf/, '').trimStart().toLowerCase());
}

/**
 * Playlists name other files or URLs for a player (or ffmpeg's hls/concat demuxers) to open: `start` is the
 * lower-cased text after any BOM and leading blanks. Returns the format, or null.
 */
function playlistFormat(start: string): string | null {
  if (start.startsWith('#extm3u')) return /#ext-x-/.test(start) ? 'hls' : 'm3u';
  if (start.startsWith('ffconcat version')) return 'ffconcat';
  if (start.startsWith('[playlist]')) return 'pls';
  if (start.startsWith('<?wpl')) return 'wpl';
  // XML playlists: the root element after the prolog (declaration, comments, doctype).
  const root = /^(?:<\?xml[\s\S]*?\?>|<!--[\s\S]*?-->|<!doctype[^>]*>|\s)*<([a-z][\w:-]*)/.exec(start.slice(0, 2048))?.[1];
  if (root === 'playlist' && start.includes('xspf.org/ns')) return 'xspf';
  if (root === 'asx') return 'asx';
  return null;
}
