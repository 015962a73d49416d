import { request as httpsRequest } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { fileTypeFromBuffer } from 'file-type';
import type { TargetGuard } from '../webhooks/target-guard.js';

/** What each media type may be (spec §2.5): MIME types by content, and the size limit. */
export const MEDIA_RULES = {
  image: { mimes: ['image/jpeg', 'image/png'], maxBytes: 5 * 1024 * 1024, label: 'JPEG or PNG, at most 5 MB' },
  video: { mimes: ['video/mp4', 'video/3gpp'], maxBytes: 16 * 1024 * 1024, label: 'MP4 or 3GPP, at most 16 MB' },
  audio: { mimes: ['audio/aac', 'audio/mp4', 'audio/mpeg', 'audio/ogg', 'audio/x-m4a', 'audio/m4a'], maxBytes: 16 * 1024 * 1024, label: 'AAC, MP4, MPEG or OGG audio, at most 16 MB' },
  document: { mimes: null, maxBytes: 100 * 1024 * 1024, label: 'any type, at most 100 MB' },
} as const;

export type MediaType = keyof typeof MEDIA_RULES;

export type MediaCheck = { ok: true; mime: string | null; bytes: number | null } | { ok: false; reason: string };

export interface MediaCheckerOptions {
  guard: TargetGuard;
  /** Extra CA certificates trusted for media hosts (PEM), besides the system's. */
  ca?: string | null;
  timeoutMs?: number;
}

/** Bytes file-type needs to recognise a format. */
const SNIFF_BYTES = 4100;

/**
 * Checks a media link before anything is sent: public HTTPS only (the webhook SSRF guard, connecting to the address
 * it checked), then a bounded GET: the size from Content-Length or by counting (stopped past the limit), the type by
 * the content's magic numbers (file-type), never by the extension or the server's Content-Type.
 */
export class MediaChecker {
  constructor(private readonly o: MediaCheckerOptions) {}

  /** Whether the link answers 200 to a GET (the body is not read): what the embedded simulator's fetch does. */
  async reachable(link: string): Promise<boolean> {
    const res = await this.get(new URL(link), undefined).catch(() => null);
    res?.destroy();
    return res?.statusCode === 200;
  }

  private get(url: URL, pinned: { address: string; family: number } | undefined): Promise<IncomingMessage> {
    const timeoutMs = this.o.timeoutMs ?? 10_000;
    return new Promise<IncomingMessage>((resolve, reject) => {
      const req = httpsRequest(
        url,
        {
          method: 'GET',
          timeout: timeoutMs,
          ...(this.o.ca ? { ca: this.o.ca } : {}),
          ...(pinned ? { lookup: (_h: string, _o: unknown, cb: (e: null, a: string, f: number) => void) => cb(null, pinned.address, pinned.family) } : {}),
        },
        resolve,
      );
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', reject);
      req.end();
    });
  }

  async check(type: MediaType, link: string): Promise<MediaCheck> {
    let url: URL;
    try {
      url = new URL(link);
    } catch {
      return { ok: false, reason: 'the link is not a URL' };
    }
    if (url.protocol !== 'https:') return { ok: false, reason: 'the media URL must be HTTPS' };
    const target = await this.o.guard.check(link);
    if (!target.ok) return { ok: false, reason: target.reason };
    const rule = MEDIA_RULES[type];
    let res: IncomingMessage;
    const timeoutMs = this.o.timeoutMs ?? 10_000;
    try {
      res = await this.get(url, target.pinned);
    } catch (err) {
      return { ok: false, reason: `the media could not be fetched: ${(err as Error).message}` };
    }
    try {
      if (res.statusCode !== 200) return { ok: false, reason: `the media host answered HTTP ${res.statusCode}` };
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > rule.maxBytes) return { ok: false, reason: `the media is ${declared} bytes; ${type}: ${rule.label}` };
      const head: Buffer[] = [];
      let headBytes = 0;
      let total = 0;
      const deadline = Date.now() + timeoutMs;
      for await (const chunk of res as AsyncIterable<Buffer>) {
        total += chunk.length;
        if (headBytes < SNIFF_BYTES) {
          head.push(chunk);
          headBytes += chunk.length;
        }
        if (total > rule.maxBytes) return { ok: false, reason: `the media is larger than allowed; ${type}: ${rule.label}` };
        // With a declared size within the limit, the head is enough; otherwise count to the end (bounded above).
        if (Number.isFinite(declared) && headBytes >= SNIFF_BYTES) break;
        if (Date.now() > deadline) return { ok: false, reason: 'the media download took too long' };
      }
      const sniffed = await fileTypeFromBuffer(Buffer.concat(head).subarray(0, SNIFF_BYTES));
      // 'audio/ogg; codecs=opus' is audio/ogg.
      const mime = sniffed?.mime.split(';')[0].trim() ?? null;
      if (rule.mimes && (!mime || !(rule.mimes as readonly string[]).includes(mime))) {
        return { ok: false, reason: `the content is ${mime ?? 'of an unknown type'}; ${type}: ${rule.label}` };
      }
      return { ok: true, mime, bytes: Number.isFinite(declared) ? declared : total };
    } catch (err) {
      return { ok: false, reason: `the media could not be read: ${(err as Error).message}` };
    } finally {
      res.destroy();
    }
  }
}
