/**
 * Splits a header value at top-level commas, i.e. not inside a quoted string or <…>, the way RFC 3261 7.3.1 joins
 * repeated headers. Empty elements are dropped.
 */
export function splitTopLevel(value: string, separator = ','): string[] {
  const parts: string[] = [];
  let start = 0;
  let quoted = false;
  let angle = false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === '<') angle = true;
    else if (c === '>') angle = false;
    else if (c === separator && !angle) {
      pushTrimmed(parts, value.slice(start, i));
      start = i + 1;
    }
  }
  pushTrimmed(parts, value.slice(start));
  return parts;
}

function pushTrimmed(parts: string[], s: string): void {
  const v = s.trim();
  if (v !== '') parts.push(v);
}

/** Whether a quoted string or <…> is left open (a malformed value the caller should refuse). */
export function hasUnbalanced(value: string): boolean {
  let quoted = false;
  let angle = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === '<') angle++;
    else if (c === '>') angle--;
    if (angle < 0 || angle > 1) return true;
  }
  return quoted || angle !== 0;
}
