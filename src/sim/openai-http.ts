/** The HTTP pieces every simulator of an OpenAI-compatible API shares: the key check and a size-capped body. */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** Whether the Authorization header is exactly `expected` ("Bearer <key>"), compared in constant time. */
export function bearerMatches(header: string | undefined, expected: Buffer): boolean {
  if (header === undefined) return false;
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The body, or null once it passes `maxBytes` (the rest is not read). */
export function readCappedBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        req.pause();
        resolve(null);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks, size)));
    req.on('error', reject);
  });
}
