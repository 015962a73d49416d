import { generateKeyPairSync } from 'node:crypto';
import { ApnsSimulator } from '../../sim/push/apns/apns-simulator.js';
import { SIMULATOR_CERT } from '../../sim/push/apns/simulator-tls.js';
import { FcmSimulator } from '../../sim/push/fcm/fcm-simulator.js';
import { type ApnsAuthKey, type FcmServiceAccount, publicKeyOf } from './credentials.js';

/**
 * The embedded FCM and APNs (production and sandbox) simulators, for apps that name no endpoints of their own. An app
 * without credentials of a service uses the simulators' own (made at start); an app's uploaded credentials are made
 * known to them, so they verify its assertions and provider tokens as the real services would.
 */
export class PushSimulators {
  readonly fcm = new FcmSimulator();
  readonly apns = { production: new ApnsSimulator({ environment: 'production' }), sandbox: new ApnsSimulator({ environment: 'sandbox' }) };
  /** The TLS certificate the APNs simulators present: the clients that talk to them trust it. */
  readonly apnsCa = SIMULATOR_CERT;
  private fcmAccount: FcmServiceAccount | null = null;
  private apnsKey: ApnsAuthKey | null = null;
  private readonly trusted = new Set<string>();

  async start(ports: { fcm?: number; apns?: number; apnsSandbox?: number } = {}): Promise<void> {
    await this.fcm.start(ports.fcm ?? 0);
    await this.apns.production.start(ports.apns ?? 0);
    await this.apns.sandbox.start(ports.apnsSandbox ?? 0);
  }

  async stop(): Promise<void> {
    await Promise.allSettled([this.fcm.stop(), this.apns.production.stop(), this.apns.sandbox.stop()]);
  }

  /** The simulators' own service account (for apps without one), made on first use. */
  defaultServiceAccount(): FcmServiceAccount {
    if (!this.fcmAccount) {
      const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      this.fcmAccount = {
        projectId: 'ferry-simulated',
        clientEmail: 'push@ferry-simulated.iam.gserviceaccount.com',
        privateKey: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
        privateKeyId: null,
        tokenUri: this.fcm.tokenUrl,
      };
    }
    return this.fcmAccount;
  }

  /** The simulators' own APNs key (for apps without one), made on first use; any bundle id. */
  defaultApnsKey(bundleId = 'com.ferry.simulated'): ApnsAuthKey {
    if (!this.apnsKey) {
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
      this.apnsKey = { keyId: 'SIMKEY0001', teamId: 'SIMTEAM001', bundleId, environment: 'production', privateKey: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString() };
    }
    return { ...this.apnsKey, bundleId };
  }

  /** Makes a service account known to the FCM simulator (its assertions verify). */
  trustServiceAccount(sa: FcmServiceAccount): void {
    const id = `fcm\u0000${sa.clientEmail}\u0000${sa.privateKey}`;
    if (this.trusted.has(id)) return;
    this.trusted.add(id);
    this.fcm.addServiceAccount({ clientEmail: sa.clientEmail, projectId: sa.projectId, publicKeyPem: publicKeyOf(sa.privateKey) });
  }

  /** Makes an APNs key known to both APNs simulators (its provider tokens verify; no topic check for the default key). */
  trustApnsKey(key: ApnsAuthKey, checkTopic: boolean): void {
    const id = `apns\u0000${key.keyId}\u0000${key.teamId}\u0000${key.privateKey}\u0000${checkTopic ? key.bundleId : ''}`;
    if (this.trusted.has(id)) return;
    this.trusted.add(id);
    const k = { keyId: key.keyId, teamId: key.teamId, publicKeyPem: publicKeyOf(key.privateKey), ...(checkTopic ? { bundleId: key.bundleId } : {}) };
    this.apns.production.addKey(k);
    this.apns.sandbox.addKey(k);
  }
}
