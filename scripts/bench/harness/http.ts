/**
 * A lean keep-alive JSON POST for the load generators (node:http: a fraction of fetch's CPU per request, so the
 * generator is not what limits a run).
 */
import http from 'node:http';

export interface JsonResponse {
  status: number;
  json: any;
}

export class JsonClient {
  private readonly agent: http.Agent;
  private readonly host: string;
  private readonly port: number;

  constructor(
    baseUrl: string,
    private readonly headers: Record<string, string>,
    maxSockets: number,
    private readonly timeoutMs = 30_000,
  ) {
    const u = new URL(baseUrl);
    this.host = u.hostname;
    this.port = Number(u.port || 80);
    this.agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
  }

  post(path: string, body: unknown): Promise<JsonResponse> {
    const data = typeof body === 'string' ? body : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: this.host,
          port: this.port,
          path,
          method: 'POST',
          agent: this.agent,
          headers: { ...this.headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
          timeout: this.timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            let json: any = null;
            try {
              json = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            } catch {
              /* not JSON */
            }
            resolve({ status: res.statusCode ?? 0, json });
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(Object.assign(new Error('request timed out'), { name: 'TimeoutError' })));
      req.on('error', reject);
      req.end(data);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
