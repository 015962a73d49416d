// Types for the two click-analysis packages that ship none (their APIs as used here).
declare module 'geoip-country' {
  export function lookup(ip: string): { country: string } | null;
}

declare module 'ua-parser-js' {
  interface UAResult {
    browser: { name?: string };
    os: { name?: string };
    device: { type?: string; vendor?: string; model?: string };
  }
  class UAParser {
    constructor(ua?: string);
    getResult(): UAResult;
  }
  export default UAParser;
}
