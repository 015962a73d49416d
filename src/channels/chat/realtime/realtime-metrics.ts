import { Counter, Gauge, type Registry } from 'prom-client';

/** The chat real-time side's metrics, on the daemon's registry. */
export class RealtimeMetrics {
  readonly sockets: Gauge;
  readonly refused: Counter<'code'>;
  readonly events: Counter<'event'>;
  readonly pushes: Counter<'outcome'>;

  constructor(registry: Registry) {
    this.sockets = new Gauge({ name: 'ferry_chat_sockets', help: 'Live chat sockets (namespace /chat-sdk) in this process', registers: [registry] });
    this.refused = new Counter({ name: 'ferry_chat_socket_refused_total', help: 'Chat socket handshakes refused, by error code', labelNames: ['code'], registers: [registry] });
    this.events = new Counter({ name: 'ferry_chat_socket_events_total', help: 'Events chat sockets sent, by event (refused ones included)', labelNames: ['event'], registers: [registry] });
    this.pushes = new Counter({
      name: 'ferry_chat_offline_pushes_total',
      help: 'Pushes to offline chat members, by outcome (sent, no_device, collapsed, failed, deferred: left to the outbox job)',
      labelNames: ['outcome'],
      registers: [registry],
    });
  }
}
