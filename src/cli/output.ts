/** Prints for people (aligned key: value lines) or for scripts (--json). */
export function print(value: unknown, json: boolean): void {
  if (json) {
    process.stdout.write(JSON.stringify(value, null, 2) + '\n');
    return;
  }
  process.stdout.write(human(value, '') + '\n');
}

function human(value: unknown, indent: string): string {
  if (Array.isArray(value)) {
    if (!value.length) return indent + '(none)';
    return value.map((v) => human(v, indent)).join('\n' + indent + '---\n');
  }
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    const width = Math.max(...entries.map(([k]) => k.length));
    return entries
      .map(([k, v]) => {
        if (v && typeof v === 'object' && !Array.isArray(v)) return `${indent}${k}:\n${human(v, indent + '  ')}`;
        if (Array.isArray(v) && v.some((x) => x && typeof x === 'object')) return `${indent}${k}:\n${human(v, indent + '  ')}`;
        const shown = Array.isArray(v) ? v.join(', ') : v === null || v === undefined ? '-' : String(v);
        return `${indent}${k.padEnd(width)}  ${shown}`;
      })
      .join('\n');
  }
  return indent + String(value);
}
