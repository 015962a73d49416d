import type { ChannelModule } from '../platform/channel-module.js';

/**
 * Every product the daemon runs. Adding one is its folder and one line here, `(await import('./<name>/index.js')).<its
 * module>,` (the import and the entry are that one line; scripts/ci/product-footprint.ts counts it). Boot and stop order
 * come from each module's `dependsOn`, not from this order. A product never imports this list (or a file that does, such
 * as src/cli/cli-context.ts) as a value: it would wait on itself here.
 */
export const CHANNEL_MODULES: readonly ChannelModule[] = [
  (await import('./sms/index.js')).smsModule,
  (await import('./webhooks/index.js')).webhooksModule,
  (await import('./otp/index.js')).otpModule,
  (await import('./messenger/index.js')).messengerModule,
  (await import('./email/index.js')).emailModule,
  (await import('./ussd/index.js')).ussdModule,
  (await import('./shortlink/index.js')).shortlinkModule,
  (await import('./push/index.js')).pushModule,
  (await import('./chat/index.js')).chatModule,
  (await import('./voice/index.js')).voiceModule,
  (await import('./logs/index.js')).logsModule,
  (await import('./mcp/index.js')).mcpModule,
] as readonly ChannelModule[];
