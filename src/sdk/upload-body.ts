import { randomBytes } from 'node:crypto';

/**
 * The upload's multipart/form-data body (one "file" part), as a stream that says how far the socket has taken it.
 * fetch's own FormData body gives no sign of progress: the upload's silence limit would have counted a large
 * file still being sent as a server that does not answer, and the progress bar jumped from 0 to done.
 */
export function uploadBody(blob: Blob, name: string, onSent: (fileBytes: number) => void): { body: ReadableStream<Uint8Array>; headers: Record<string, string> } {
  const boundary = `----soundry-${randomBytes(12).toString('hex')}`;
  // As the WHATWG multipart encoder escapes a file name: a quote or a line break would end the header.
  const safeName = name.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${safeName}"\r\nContent-Type: ${blob.type || 'application/octet-stream'}\r\n\r\n`);
  const whole = new Blob([head, blob, `\r\n--${boundary}--\r\n`]);
  const reader = whole.stream().getReader();
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    // Pulled as the socket drains: each pull is the server taking bytes, which is progress.
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) return controller.close();
      sent += value.byteLength;
      onSent(Math.min(blob.size, Math.max(0, sent - head.length)));
      controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
  // A declared length lets the server refuse an oversize upload before reading it (src/http/routes/upload.ts).
  return { body, headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(whole.size) } };
}
