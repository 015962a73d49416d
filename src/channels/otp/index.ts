import type { ChannelModule } from '../../platform/channel-module.js';
import type { SmsGateway } from '../sms/sms-gateway.js';
import { OtpMetrics } from './otp-metrics.js';
import { OTP_MCP_TOOLS } from './otp-mcp-tools.js';
import { otpRoutes } from './otp-routes.js';
import { OtpService } from './otp-service.js';
import { publishUssdFallback, UssdOtpFallback } from './ussd-otp-fallback.js';

/** OTP: codes sent as SMS on the priority lane, verify and resend under /v1/otp, and the USSD fallback. */
export const otpModule: ChannelModule<OtpService> = {
  name: 'otp',
  maturity: 'stable',
  tag: { name: 'otp', description: 'One-time passwords: request, verify, resend (SMS, with a USSD fallback)' },
  scopes: ['otp:send', 'otp:verify'],
  configKey: 'otp',
  dependsOn: ['sms', 'webhooks'],
  async create(ctx) {
    const { config } = ctx;
    const sms = ctx.use<SmsGateway>('sms');
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
    // The SMPP path while no USSD module runs; the USSD module takes the SMPP ingress and serves this code on every
    // ingress through its reserved-code registry.
    sms.setUssdHandler((mo) => ussd.handle(mo));
    publishUssdFallback(otp, ussd);
    return {
      service: otp,
      mcpTools: OTP_MCP_TOOLS,
      async routes(app) {
        await app.register(otpRoutes, {
          otp,
          defaultCountry: config.sms.defaultCountry,
          defaultSender: config.otp.defaultSender,
          resendCooldownSeconds: config.otp.resendCooldownSeconds,
          requestsPerHour: config.otp.requestsPerHour,
          ussdServiceCode: config.otp.ussdServiceCode,
        });
      },
      async stop() {
        await ussd.close();
        otp.close();
      },
    };
  },
};
