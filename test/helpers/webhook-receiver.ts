import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  json: any;
  at: number;
}

/** A local webhook receiver: records every request; `respond` decides the answer (status, 'hang', or a status later). */
export class WebhookReceiver {
  readonly received: Received[] = [];
  respond: (r: Received, n: number) => number | 'hang' | Promise<number> = () => 200;
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<WebhookReceiver> {
    let self: WebhookReceiver | null = null;
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const r: Received = { headers: req.headers, body, json: JSON.parse(body || 'null'), at: Date.now() };
        self!.received.push(r);
        const answer = self!.respond(r, self!.received.length);
        if (answer === 'hang') return;
        if (typeof answer === 'number') return void res.writeHead(answer).end();
        void answer.then((status) => res.writeHead(status).end());
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    self = new WebhookReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`);
    return self;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
