/**
 * The push bench's simulators in a process of their own (`npm run bench -- push --split`): FCM and APNs are on other
 * machines in production, so their CPU is not the daemon's. Prints one JSON line (URLs, the CA, credentials to upload),
 * answers `stats` on stdin with the counters, and ends when stdin closes.
 */
import { createInterface } from 'node:readline';
import { PushSimulators } from './simulators.js';

const sims = new PushSimulators();
await sims.start();
const sa = sims.defaultServiceAccount();
const key = sims.defaultApnsKey('com.example.bench');
sims.trustServiceAccount(sa);
sims.trustApnsKey(key, true);
process.stdout.write(
  `${JSON.stringify({
    fcm: sims.fcm.url,
    oauthToken: sims.fcm.tokenUrl,
    apns: sims.apns.production.url,
    ca: sims.apnsCa,
    serviceAccount: { type: 'service_account', project_id: sa.projectId, private_key_id: 'bench', private_key: sa.privateKey, client_email: sa.clientEmail, token_uri: sims.fcm.tokenUrl },
    apnsKey: { privateKey: key.privateKey, keyId: key.keyId, teamId: key.teamId, bundleId: key.bundleId, environment: 'production' },
  })}\n`,
);
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (line.trim() === 'stats') process.stdout.write(`${JSON.stringify({ fcm: sims.fcm.counters.sent, apns: sims.apns.production.stats.sent })}\n`);
});
lines.on('close', () => {
  void sims.stop().then(() => process.exit(0));
});
