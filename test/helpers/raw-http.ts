import net from 'node:net';

export interface RawResponse {
  /** 0 when the server closed without an answer. */
  status: number;
  headers: Record<string, string>;
  /** The whole answer as received (latin1). */
  text: string;
  /** The body parsed as JSON, or null. */
  json: any;
}

/**
 * One raw HTTP/1.1 exchange over a socket, for requests a regular client will not send (malformed, oversized):
 * resolves once the answer's headers and Content-Length body are in, the server closes, or the time is up.
 */
export function rawHttp(port: number, request: string | Buffer, timeoutMs = 10_000): Promise<RawResponse> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let settled = false;
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      socket.write(request, () => undefined);
    });
    const parse = (): RawResponse | null => {
      const text = Buffer.concat(chunks).toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return null;
      const [first, ...lines] = text.slice(0, end).split('\r\n');
      const headers: Record<string, string> = {};
      for (const l of lines) {
        const i = l.indexOf(':');
        if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
      }
      const body = text.slice(end + 4);
      const length = headers['content-length'] === undefined ? null : Number(headers['content-length']);
      if (length !== null && Buffer.byteLength(body, 'latin1') < length) return null;
      let json: any = null;
      try {
        json = body ? JSON.parse(Buffer.from(body, 'latin1').toString('utf8')) : null;
      } catch {
        json = null;
      }
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(first);
      return { status: m ? Number(m[1]) : 0, headers, text, json };
    };
    const done = (): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(parse() ?? { status: 0, headers: {}, text: Buffer.concat(chunks).toString('latin1'), json: null });
    };
    const timer = setTimeout(done, timeoutMs);
    socket.on('data', (d) => {
      chunks.push(d);
      if (parse()) done();
    });
    socket.on('error', done);
    socket.on('close', done);
  });
}
