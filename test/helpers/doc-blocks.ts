// The runnable shell blocks of the README and the docs pages, as the tests that run them read them.

/** The ```sh blocks between two HTML comment markers, in order (every pair of markers in the text). */
export function markedBlocks(markdown: string, startMarker: string, endMarker: string): string[] {
  const out: string[] = [];
  let from = 0;
  for (;;) {
    const start = markdown.indexOf(startMarker, from);
    if (start < 0) break;
    const end = markdown.indexOf(endMarker, start);
    if (end < 0) throw new Error(`${startMarker} without ${endMarker}`);
    out.push(...[...markdown.slice(start, end).matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]));
    from = end + endMarker.length;
  }
  return out;
}

/** The shell blocks of the README's quick start, in order. */
export function quickstartBlocks(readme: string): string[] {
  const start = readme.indexOf('<!-- quickstart:start -->');
  const end = readme.indexOf('<!-- quickstart:end -->');
  if (start < 0 || end < start) throw new Error('README.md has no quickstart:start / quickstart:end markers');
  return markedBlocks(readme, '<!-- quickstart:start -->', '<!-- quickstart:end -->');
}

/** A docs page's runnable examples: the ```sh blocks between `<!-- example:start -->` and `<!-- example:end -->`. */
export function exampleBlocks(page: string): string[] {
  return markedBlocks(page, '<!-- example:start -->', '<!-- example:end -->');
}
