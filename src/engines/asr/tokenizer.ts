/**
 * The part of Whisper's tokenizer the decoder loop needs: the special-token ids of the prompt, the
 * language tokens, and byte-level BPE detokenisation back to UTF-8. Encoding text is never needed
 * (the prompt is made of special tokens only), so merges are not read.
 */
import { readFile } from 'node:fs/promises';

/** GPT-2 byte-level alphabet: each byte maps to a printable code point; reversed here to decode. */
function unicodeToByte(): Map<string, number> {
  const keep: number[] = [];
  for (let b = 33; b <= 126; b++) keep.push(b);
  for (let b = 161; b <= 172; b++) keep.push(b);
  for (let b = 174; b <= 255; b++) keep.push(b);
  const map = new Map<string, number>();
  for (const b of keep) map.set(String.fromCodePoint(b), b);
  // Bytes outside the printable ranges are shifted above 255 in byte order.
  let extra = 0;
  for (let b = 0; b < 256; b++) if (!keep.includes(b)) map.set(String.fromCodePoint(256 + extra++), b);
  return map;
}

interface TokenizerJson {
  added_tokens?: Array<{ id: number; content: string; special?: boolean }>;
  model?: { vocab?: Record<string, number> };
}

export class WhisperTokenizer {
  readonly eot: number;
  readonly sot: number;
  readonly transcribe: number;
  readonly noTimestamps: number;
  /** Language code (e.g. "en", "yue") -> token id, in the model's language order. */
  readonly languages: Map<string, number>;
  private readonly idToToken: Map<number, string>;
  private readonly special: Set<number>;
  private readonly byteOf = unicodeToByte();

  constructor(vocab: Record<string, number>, added: Array<{ id: number; content: string }>) {
    this.idToToken = new Map();
    for (const [tok, id] of Object.entries(vocab)) this.idToToken.set(id, tok);
    const byContent = new Map<string, number>();
    for (const a of added) {
      this.idToToken.set(a.id, a.content);
      byContent.set(a.content, a.id);
    }
    const need = (t: string): number => {
      const id = byContent.get(t) ?? vocab[t];
      if (id === undefined) throw new Error(`the Whisper tokenizer has no ${t} token`);
      return id;
    };
    this.eot = need('<|endoftext|>');
    this.sot = need('<|startoftranscript|>');
    this.transcribe = need('<|transcribe|>');
    this.noTimestamps = need('<|notimestamps|>');
    const translate = need('<|translate|>');
    // Whisper lays its language tokens out right after <|startoftranscript|> and before <|translate|>.
    this.languages = new Map();
    for (let id = this.sot + 1; id < translate; id++) {
      const m = /^<\|([a-z_-]+)\|>$/.exec(this.idToToken.get(id) ?? '');
      if (m) this.languages.set(m[1]!, id);
    }
    if (this.languages.size === 0) throw new Error('the Whisper tokenizer lists no language tokens (an English-only model?)');
    this.special = new Set(added.map((a) => a.id));
  }

  static async load(path: string): Promise<WhisperTokenizer> {
    const json = JSON.parse(await readFile(path, 'utf8')) as TokenizerJson;
    if (!json.model?.vocab) throw new Error(`${path} has no model.vocab`);
    return new WhisperTokenizer(json.model.vocab, json.added_tokens ?? []);
  }

  /** Plain text tokens are the ids below <|endoftext|>; everything from it up is control. */
  isText(id: number): boolean {
    return id < this.eot && !this.special.has(id);
  }

  /** Joins the byte-level pieces and decodes UTF-8 once, so characters split across tokens survive. */
  decode(ids: readonly number[]): string {
    const bytes: number[] = [];
    for (const id of ids) {
      if (!this.isText(id)) continue;
      const tok = this.idToToken.get(id);
      if (tok === undefined) continue;
      for (const ch of tok) {
        const b = this.byteOf.get(ch);
        if (b !== undefined) bytes.push(b);
      }
    }
    return new TextDecoder('utf-8').decode(Uint8Array.from(bytes));
  }
}
