import type { CallHost } from './call-host.js';
import type { Dialog } from './dialog.js';

/** Sends BYE in `dialog` through its own client transaction; `done` once it is answered, times out or cannot be sent. */
export function sendBye(host: CallHost, dialog: Dialog, done: () => void): void {
  host.startClientTransaction(dialog.createRequest('BYE'), dialog.nextHop(), {
    onResponse: (res) => {
      if (res.status >= 200) done();
    },
    onTimeout: done,
    onTransportError: done,
  });
}
