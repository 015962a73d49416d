import { SipParseError } from './errors.js';

const CRLF2 = Buffer.from('\r\n\r\n');
const CONTENT_LENGTH = /^(?:content-length|l)[ \t]*:[ \t]*(\d{1,9})[ \t]*$/im;

/**
 * Cuts a TCP byte stream into SIP messages by Content-Length (RFC 3261 18.3). Handles partial reads and several
 * messages per chunk; buffers at most maxMessageBytes (plus the chunk being read). RFC 5626 keep-alives between
 * messages are reported (a CRLFCRLF ping) or skipped (a CRLF pong). Throws SipParseError when the stream cannot be
 * framed: the caller closes that connection.
 */
export class SipStreamFramer {
  private pending: Buffer | undefined;

  constructor(
    private readonly onMessage: (message: Buffer) => void,
    private readonly onPing: () => void,
    private readonly maxMessageBytes: number,
  ) {}

  get buffered(): number {
    return this.pending?.length ?? 0;
  }

  push(chunk: Buffer): void {
    const buf = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
    this.pending = undefined;
    let pos = 0;
    while (pos < buf.length) {
      if (buf[pos] === 0x0d || buf[pos] === 0x0a) {
        if (buf.length - pos < 4) break; // a ping split across reads, or a pong: decide with more bytes
        if (buf.compare(CRLF2, 0, 4, pos, pos + 4) === 0) {
          this.onPing();
          pos += 4;
        } else if (buf[pos] === 0x0d && buf[pos + 1] === 0x0a) pos += 2;
        else if (buf[pos] === 0x0a) pos += 1;
        else throw new SipParseError('stray CR between messages');
        continue;
      }
      const headerEnd = buf.indexOf(CRLF2, pos);
      if (headerEnd < 0) {
        if (buf.length - pos > this.maxMessageBytes) throw new SipParseError('headers larger than the message cap');
        break;
      }
      const m = CONTENT_LENGTH.exec(buf.toString('latin1', pos, headerEnd));
      if (!m) throw new SipParseError('no Content-Length on a stream transport');
      const total = headerEnd + 4 - pos + Number(m[1]);
      if (total > this.maxMessageBytes) throw new SipParseError('message larger than the cap');
      if (buf.length - pos < total) break;
      this.onMessage(buf.subarray(pos, pos + total));
      pos += total;
    }
    // copy a tail so the chunk it came from is not kept alive
    if (pos < buf.length) this.pending = pos > 0 ? Buffer.from(buf.subarray(pos)) : buf;
  }
}
