import { fileTypeFromBuffer } from 'file-type';
import { GuardedHttpError, type GuardedHttp, type GuardedStream } from '../../security/guarded-http.js';
import type { TargetGuard } from '../../security/target-guard.js';

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
 * Checks a media link before anything is sent: public HTTPS only (the webhook SSRF guard: every address of the name
 * checked, the connection to a checked one), then a bounded GET through the guarded client: the size from
 * Content-Length or by counting the bytes read (stopped past the limit), the type by the content's magic numbers
 * (file-type), never by the extension or the server's Content-Type. Redirects are not followed.
 */
export class MediaChecker {
  private readonly http: GuardedHttp;

  constructor(private readonly o: MediaCheckerOptions) {
    this.http = o.guard.client({ ca: o.ca });
  }

  /** Whether the link answers 200 to a guarded GET (the body is not read): what the embedded simulator's fetch does. */
  async reachable(link: string): Promise<boolean> {
    const res = await this.get(link, 0).catch(() => null);
    res?.close();
    return res?.status === 200;
  }

  private get(link: string, maxBytes: number): Promise<GuardedStream> {
    const timeoutMs = this.o.timeoutMs ?? 10_000;
    return this.http.open(link, { method: 'GET', timeoutMs, maxBytes });
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
    let res: GuardedStream;
    try {
      res = await this.get(link, rule.maxBytes);
    } catch (err) {
      return { ok: false, reason: `the media could not be fetched: ${(err as Error).message}` };
    }
    try {
      if (res.status !== 200) return { ok: false, reason: `the media host answered HTTP ${res.status}` };
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > rule.maxBytes) return { ok: false, reason: `the media is ${declared} bytes; ${type}: ${rule.label}` };
      const head: Buffer[] = [];
      let headBytes = 0;
      let total = 0;
      // The client stops past rule.maxBytes by bytes read, whatever Content-Length said (TOO_LARGE below).
      for await (const chunk of res.chunks()) {
        total += chunk.length;
        if (headBytes < SNIFF_BYTES) {
          head.push(chunk);
          headBytes += chunk.length;
        }
        // With a declared size within the limit, the head is enough; otherwise count to the end (bounded above).
        if (Number.isFinite(declared) && headBytes >= SNIFF_BYTES) break;
      }
      const sniffed = await fileTypeFromBuffer(Buffer.concat(head).subarray(0, SNIFF_BYTES));
      // 'audio/ogg; codecs=opus' is audio/ogg.
      const mime = sniffed?.mime.split(';')[0].trim() ?? null;
      if (rule.mimes && (!mime || !(rule.mimes as readonly string[]).includes(mime))) {
        return { ok: false, reason: `the content is ${mime ?? 'of an unknown type'}; ${type}: ${rule.label}` };
      }
      return { ok: true, mime, bytes: Number.isFinite(declared) ? declared : total };
    } catch (err) {
      if (err instanceof GuardedHttpError && err.kind === 'TOO_LARGE') return { ok: false, reason: `the media is larger than allowed; ${type}: ${rule.label}` };
      if (err instanceof GuardedHttpError && err.kind === 'TIMEOUT') return { ok: false, reason: 'the media download took too long' };
      return { ok: false, reason: `the media could not be read: ${(err as Error).message}` };
    } finally {
      res.close();
    }
  }
}
