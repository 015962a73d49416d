import type { ChannelModule } from '../../platform/channel-module.js';
import type { SmsGatewayService } from '../../messaging/sms-gateway-service.js';
import { OtpMetrics } from './otp-metrics.js';
import { OTP_MCP_TOOLS } from './otp-mcp-tools.js';
import { otpRoutes } from './otp-routes.js';
import { OtpService } from './otp-service.js';
import { otpConfigSchema, type OtpConfig } from './config.js';
import { OTP_ERRORS } from './errors.js';
import { OTP_SCOPES } from './scopes.js';
import { UssdOtpFallback } from './ussd-otp-fallback.js';
import { dialsServiceCode } from '../../messaging/ussd-mo-handlers.js';

// The service other products reach through ctx.use('otp') (import type only: rule in eslint.config.js).
export type { OtpService } from './otp-service.js';

/** OTP: codes sent as SMS on the priority lane, verify and resend under /v1/otp, and the USSD fallback. */
export const otpModule: ChannelModule<OtpService> = {
  name: 'otp',
  maturity: 'stable',
  tag: { name: 'otp', description: 'One-time passwords: request, verify, resend (SMS, with a USSD fallback)' },
  scopes: OTP_SCOPES,
  config: { key: 'otp', schema: otpConfigSchema },
  errors: OTP_ERRORS,
  dependsOn: ['sms', 'webhooks'],
  async create(ctx) {
    const config = { otp: ctx.section<OtpConfig>() };
    const sms = ctx.use<SmsGatewayService>('sms');
    const metrics = new OtpMetrics(ctx.metrics.registry);
    const otp = new OtpService({
      store: ctx.backends.otp,
      sms: sms.gateway.sms,
      keys: { code: ctx.deriveKey('otp-code'), hash: ctx.deriveKey('otp-hash') },
      metrics,
      log: ctx.log,
      resendCooldownMs: config.otp.resendCooldownSeconds * 1000,
      requestsPerHour: config.otp.requestsPerHour,
      retainMs: config.otp.expiredRetentionMinutes * 60_000,
    });
    // OTP state lives in the OTP store (Redis or SQL), not in SQL with the events: they are written just after the
    // change, in a statement shared by concurrent requests (the sink's insertNow); a crash in between loses that one event.
    otp.onEvent = (type, data) => ctx.events.emitNow({ accountId: data.accountId, type, messageKey: data.id, data: { ...data } });
    const ussd = new UssdOtpFallback({
      otp,
      pool: sms.gateway.pool,
      serviceCode: config.otp.ussdServiceCode,
      log: ctx.rootLog.child({ component: 'ussd-otp' }),
      metrics,
    });
    // The SMPP path while no USSD module runs; the USSD module, registered after this one, takes the SMPP sessions and
    // serves this code on every ingress through its reserved-code registry.
    const unregisterUssd = sms.ussd.register({ name: 'otp', accepts: dialsServiceCode(config.otp.ussdServiceCode), handle: ussd.handle });
    otp.ussdFallback = ussd;
    return {
      service: otp,
      mcpTools: OTP_MCP_TOOLS,
      async routes(app) {
        await app.register(otpRoutes, {
          otp,
          defaultCountry: sms.defaultCountry,
          defaultSender: config.otp.defaultSender,
          resendCooldownSeconds: config.otp.resendCooldownSeconds,
          requestsPerHour: config.otp.requestsPerHour,
          ussdServiceCode: config.otp.ussdServiceCode,
        });
      },
      // otp.expired for the OTPs this instance sent: the watch list is in its memory, and OTPs are requested over the API.
      jobs: [{ name: 'otp.expiry-sweep', everyMs: 1000, scope: 'instance', roles: ['api'], run: () => otp.sweepExpired() }],
      async stop() {
        unregisterUssd();
        await ussd.close();
        otp.close();
      },
    };
  },
};
