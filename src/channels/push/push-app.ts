/** Provider base URLs of an app; absent: the real services (or the simulators where the embedded default runs them). */
export interface PushEndpoints {
  fcm?: string;
  oauthToken?: string;
  apns?: string;
}

export type PushProviderService = 'fcm' | 'apns';

/** An account's mobile app as stored (its credentials live in the credential store, never here). */
export interface PushApp {
  id: string;
  accountId: string;
  name: string;
  fcmProjectId: string | null;
  apnsBundleId: string | null;
  apnsEnvironment: 'sandbox' | 'production' | null;
  endpoints: PushEndpoints;
  /** Set when a provider rejected the app's credentials: its sends wait until they change. */
  paused: { service: string; reason: string | null; at: Date } | null;
  createdAt: Date;
  updatedAt: Date;
}
