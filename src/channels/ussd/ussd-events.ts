/** The USSD event family (joins the one catalogue through the module's `events`). */
export const USSD_EVENTS = {
  'ussd.session.started': 'a USSD session started (data: sessionId, serviceCode, dialled, phoneNumber, networkCode, channel, resumedFrom)',
  'ussd.session.ended':
    'a USSD session ended (data.status Success: the app ended it, Incomplete: the network or phone did or it timed out, Failed: the app failed and the apology was shown; durationInMillis, hopsCount, input: the last input, errorMessage)',
} as const;

declare module '../../events/catalogue.js' {
  interface ProductEventTypes {
    'ussd.session.started': true;
    'ussd.session.ended': true;
  }
}
