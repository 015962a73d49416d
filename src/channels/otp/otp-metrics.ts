import { Counter, Gauge, type Registry } from 'prom-client';

export type OtpRequestOutcome = 'sent' | 'active_exists' | 'rate_limited' | 'send_failed';
export type OtpVerifyOutcome = 'verified' | 'invalid_pin' | 'locked' | 'expired' | 'not_found';
export type OtpResendOutcome = 'sent' | 'cooldown' | 'locked' | 'expired' | 'not_found' | 'send_failed';
export type OtpUssdOutcome = 'answered' | 'no_pending' | 'failed';

/**
 * OTP metrics. Labels are outcomes only: never a phone, an id or a code. Conversion is
 * verifications{outcome="verified"} / requests{outcome="sent"}; the gauge gives it since this process started.
 */
export class OtpMetrics {
  readonly requests: Counter<'outcome'>;
  readonly verifications: Counter<'outcome'>;
  readonly resends: Counter<'outcome'>;
  readonly ussd: Counter<'outcome'>;
  readonly conversion: Gauge;
  private sent = 0;
  private verified = 0;

  constructor(registry: Registry) {
    this.requests = new Counter({
      name: 'ferry_otp_requests_total',
      help: 'OTP requests by outcome: sent (created and handed to SMS), active_exists, rate_limited, send_failed (SMS refused; the OTP was withdrawn)',
      labelNames: ['outcome'] as const,
      registers: [registry],
    });
    this.verifications = new Counter({
      name: 'ferry_otp_verifications_total',
      help: 'OTP verifications by outcome: verified, invalid_pin, locked, expired, not_found',
      labelNames: ['outcome'] as const,
      registers: [registry],
    });
    this.resends = new Counter({
      name: 'ferry_otp_resends_total',
      help: 'OTP resends by outcome: sent, cooldown, locked, expired, not_found, send_failed',
      labelNames: ['outcome'] as const,
      registers: [registry],
    });
    this.ussd = new Counter({
      name: 'ferry_otp_ussd_lookups_total',
      help: 'USSD fallback sessions by outcome: answered (a pending code was read out), no_pending, failed (lookup or answer failed)',
      labelNames: ['outcome'] as const,
      registers: [registry],
    });
    // Zero the series so dashboards see them before the first event.
    for (const o of ['sent', 'active_exists', 'rate_limited', 'send_failed'] as const) this.requests.inc({ outcome: o }, 0);
    for (const o of ['verified', 'invalid_pin', 'locked', 'expired', 'not_found'] as const) this.verifications.inc({ outcome: o }, 0);
    const ratio = () => (this.sent ? this.verified / this.sent : 0);
    this.conversion = new Gauge({
      name: 'ferry_otp_conversion_ratio',
      help: 'Verified OTPs per OTP sent since this instance started (for a windowed rate use the two counters)',
      registers: [registry],
      collect() {
        this.set(ratio());
      },
    });
  }

  request(outcome: OtpRequestOutcome): void {
    this.requests.inc({ outcome });
    if (outcome === 'sent') this.sent++;
  }

  verify(outcome: OtpVerifyOutcome): void {
    this.verifications.inc({ outcome });
    if (outcome === 'verified') this.verified++;
  }

  resend(outcome: OtpResendOutcome): void {
    this.resends.inc({ outcome });
  }

  ussdLookup(outcome: OtpUssdOutcome): void {
    this.ussd.inc({ outcome });
  }
}
