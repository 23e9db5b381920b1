import { describe, expect, it } from 'vitest';
import { safeFileName } from '../../src/http/routes/upload.js';

/** An upload is served with the type of its extension: the stored name must keep it (docs/api.md, uploads). */
describe('upload file names', () => {
  it.each([
    ['song.wav', 'song.wav'],
    ['a b c.MP3', 'a_b_c.MP3'],
    ['../../etc/passwd', 'passwd'],
    ['C:\\\\music\\\\take 1.flac', 'take_1.flac'],
    // Found from outside: nothing readable before the extension lost it (`mp3`, served as octet-stream).
    ['日本語😀.mp3', 'upload.mp3'],
    ['..mp3', 'upload.mp3'],
    // Never a dotfile.
    ['.htaccess', 'upload.htaccess'],
    // Found from outside: the multipart encoder's escapes of a quote and a line break were kept as `_22`, `_0A`.
    ['say %22hi%22.mp3', 'say_hi.mp3'],
    ['new%0Aline%0D.mp3', 'new_line.mp3'],
    ['', 'upload.bin'],
    // Found from outside: an accented letter was dropped with its accent (`caf.mp3`). Latin letters keep their base.
    ['café.mp3', 'cafe.mp3'],
    ['cafe\u0301 noir.mp3', 'cafe_noir.mp3'],
    ['Straße – Ærø Łódź.wav', 'Strasse_AEro_Lodz.wav'],
    ['Ñandú señor.ogg', 'Nandu_senor.ogg'],
    ['Москва café.mp3', 'cafe.mp3'],
    // An accent on an extension's letter keeps the extension's base letter, not a name without extension.
    ['song.mp3́', 'song.mp3'],
    // Ligatures, full-width and styled letters as plain ones (found from outside: `ﬁle.mp3` was stored as `le.mp3`).
    ['ﬁle.mp3', 'file.mp3'],
    ['ｆｕｌｌ.mp3', 'full.mp3'],
    ['Æsir ĳ ǅ.mp3', 'AEsir_ij_Dz.mp3'],
    // Device names of Windows do not save there under their own name.
    ['CON.mp3', 'CON_.mp3'],
    ['lpt9.flac', 'lpt9_.flac'],
    ['console.mp3', 'console.mp3'],
    ['___', 'upload.bin'],
  ])('%s -> %s', (given, stored) => {
    expect(safeFileName(given)).toBe(stored);
  });

  it('keeps the extension of a name cut to 120 characters', () => {
    const stored = safeFileName(`${'a'.repeat(300)}.wav`);
    expect(stored).toHaveLength(120);
    expect(stored.endsWith('.wav')).toBe(true);
  });
});
