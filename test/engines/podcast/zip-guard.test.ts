import { describe, expect, it } from 'vitest';
import { TaskFailure } from '../../../src/domain/errors.js';
import { openCheckedZip, tooLargeMessage } from '../../../src/engines/podcast/extract/zip-guard.js';
import { deflatedRepeat, docxFrame, writeZip } from '../../helpers/hostile-files.js';

describe('zip guard: declared sizes', () => {
  // JSZip reads a size of 2 GiB or more as a negative number (32-bit shifts); the declared-size check then
  // passed it, and the streaming count failed it as "damaged" instead of naming the limit. Found from outside
  // with an honest zip64 bomb of 3 GiB; the 32-bit field overflows the same way.
  it.each([2 * 1024 ** 3, 3 * 1024 ** 3, 0xffffffff - 1])('an entry declaring %d bytes is refused by its size, naming the limit', async (claimedSize) => {
    const bomb = await deflatedRepeat(4 * 1024 * 1024);
    const zip = writeZip([...docxFrame(), { name: 'word/document.xml', deflated: bomb, claimedSize }]);
    const opened = openCheckedZip(zip);
    await expect(opened).rejects.toBeInstanceOf(TaskFailure);
    await expect(opened).rejects.toThrow(tooLargeMessage());
  });

  it('an archive within the limits opens', async () => {
    const zip = writeZip([...docxFrame(), { name: 'word/document.xml', data: Buffer.from('<w:document/>') }]);
    expect(Object.keys((await openCheckedZip(zip)).files)).toContain('word/document.xml');
  });
});
