import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { bindClient } from '../../../src/smpp/client.js';
import { CommandStatus } from '../../../src/smpp/constants.js';
import { encodeGsm7 } from '../../../src/smpp/text/gsm7.js';
import { CustomerClient } from './customer-client.js';
import { customerFixture } from './customer-fixture.js';

function selfSignedCert(): { dir: string; cert: string; key: string } {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-tls-'));
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-days', '1', '-keyout', key, '-out', cert], { stdio: 'ignore' });
  return { dir, cert, key };
}

t.test('the TLS listener serves the same SMPP, beside the plain one', async (t) => {
  const { dir, cert, key } = selfSignedCert();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // Paths for the certificate, PEM text for the key: both forms are accepted.
  const f = await customerFixture(t, { tls: { port: 0, cert, key: readFileSync(key, 'utf8') } });
  const acc = await f.account('secure');
  const ports = f.server.ports;
  t.ok(ports.tls && ports.tls !== ports.plain, 'two listeners');
  t.equal(f.server.addresses.tls?.port, ports.tls);

  const overTls = await f.bind(acc, 'transceiver', { tls: true });
  t.ok(overTls.socket.constructor.name.includes('TLS'), 'the smpp package connected over TLS');
  const resp = await overTls.request('submit_sm', { source_addr: 'Ferry', source_addr_ton: 5, destination_addr: '447700900123', data_coding: 0, short_message: encodeGsm7('over tls') });
  t.equal(resp.command_status, CommandStatus.ESME_ROK);
  t.equal(f.sms.last().text, 'over tls');

  const wrong = await CustomerClient.bound(ports.tls!, 'transceiver', acc.systemId, 'badpass1', { tls: true });
  t.equal(wrong.resp.command_status, CommandStatus.ESME_RBINDFAIL, 'bind checks apply over TLS too');
  await wrong.client.close();

  // Ferry's own client (tls.connect underneath) as a second, independent TLS peer.
  const session = await bindClient({ host: '127.0.0.1', port: ports.tls!, tls: { rejectUnauthorized: false }, bindType: 'transmitter', system_id: acc.systemId, password: acc.password });
  t.teardown(() => session.close());
  const viaFerryClient = await session.request({ command: 'submit_sm', source_addr: 'Ferry', source_addr_ton: 5, destination_addr: '447700900124', short_message: encodeGsm7('node tls') });
  t.equal(viaFerryClient.command_status, CommandStatus.ESME_ROK);
  t.equal(f.sms.last().destination, '447700900124');

  const plain = await f.bind(acc, 'transceiver');
  t.equal((await plain.request('enquire_link')).command_status, CommandStatus.ESME_ROK, 'the plain listener still works');
  t.equal(f.server.binds.count(acc.accountId), 3, 'binds over both listeners share one registry');
});
