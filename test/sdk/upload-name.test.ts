import { afterEach, describe, expect, it } from 'vitest';
import { Soundry } from '../../src/sdk/index.js';
import { answer, startFakeApi, type FakeApi } from '../helpers/fake-api.js';

/**
 * Found from outside: a File given to the SDK (`new File([...], 'Chanson d’été.mp3')`) was uploaded as `upload.bin`,
 * so the server stored and served it without its name or extension. A real node:http server reads the multipart head.
 */
const servers: FakeApi[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.shutdown()));
});

/** The file name of the multipart body's part, as the server's parser reads it (UTF-8). */
async function uploadedName(file: Blob): Promise<string> {
  let head = '';
  const api = await startFakeApi({
    '/audio/api/v1/api-keys/files/upload': (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        head = Buffer.concat(chunks).toString('utf8').split('\r\n\r\n')[0]!;
        answer(res, { url: 'http://127.0.0.1:1/files/x', size: 3, expires_in: 60 });
      });
    },
  });
  servers.push(api);
  await new Soundry({ baseUrl: api.base, apiKey: 'sk_x' }).transport.upload(file);
  return /filename="([^"]*)"/.exec(head)?.[1] ?? '';
}

describe('SDK upload file names', () => {
  it('a File is sent with its own name', async () => {
    expect(await uploadedName(new File(['abc'], 'Chanson d’été 日本語.mp3', { type: 'audio/mpeg' }))).toBe('Chanson d’été 日本語.mp3');
  });

  it('a bare Blob, which has no name, as upload.bin', async () => {
    expect(await uploadedName(new Blob(['abc'], { type: 'audio/mpeg' }))).toBe('upload.bin');
  });
});
