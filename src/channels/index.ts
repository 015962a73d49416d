import type { ChannelModule } from '../platform/channel-module.js';
import { logsModule } from './logs/index.js';
import { mcpModule } from './mcp/index.js';
import { messengerModule } from './messenger/index.js';
import { emailModule } from './email/index.js';
import { otpModule } from './otp/index.js';
import { shortlinkModule } from './shortlink/index.js';
import { smsModule } from './sms/index.js';
import { ussdModule } from './ussd/index.js';
import { webhooksModule } from './webhooks/index.js';

/**
 * Every product the daemon runs. Adding one is its folder and one line here; boot and stop order come from each
 * module's `dependsOn`, not from this order.
 */
export const CHANNEL_MODULES: readonly ChannelModule[] = [smsModule, webhooksModule, otpModule, messengerModule, emailModule, ussdModule, shortlinkModule, logsModule, mcpModule] as readonly ChannelModule[];

