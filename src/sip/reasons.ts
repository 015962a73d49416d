const REASONS: Record<number, string> = {
  100: 'Trying', 180: 'Ringing', 181: 'Call Is Being Forwarded', 182: 'Queued', 183: 'Session Progress',
  200: 'OK', 202: 'Accepted', 301: 'Moved Permanently', 302: 'Moved Temporarily', 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found',
  405: 'Method Not Allowed', 407: 'Proxy Authentication Required', 408: 'Request Timeout',
  415: 'Unsupported Media Type', 480: 'Temporarily Unavailable', 481: 'Call/Transaction Does Not Exist',
  482: 'Loop Detected', 483: 'Too Many Hops', 486: 'Busy Here', 487: 'Request Terminated', 488: 'Not Acceptable Here',
  491: 'Request Pending', 500: 'Server Internal Error', 501: 'Not Implemented', 503: 'Service Unavailable',
  504: 'Server Time-out', 505: 'Version Not Supported', 513: 'Message Too Large', 600: 'Busy Everywhere',
  603: 'Decline', 604: 'Does Not Exist Anywhere', 606: 'Not Acceptable',
};

/** The RFC 3261 reason phrase for a status code, or a generic one for its class. */
export function reasonPhrase(status: number): string {
  return REASONS[status] ?? (status < 200 ? 'Session Progress' : status < 300 ? 'OK' : 'Error');
}
