/**
 * werift, loaded on first use: importing it costs about 0.4 s and 45 MB (most of it @peculiar/x509), which a daemon
 * or test that never terminates WebRTC must not pay. Only types are imported statically elsewhere.
 */
type Werift = typeof import('werift');

let loading: Promise<Werift> | undefined;

export function loadWerift(): Promise<Werift> {
  loading ??= import('werift').catch((error: unknown) => {
    loading = undefined;
    throw error;
  });
  return loading;
}
