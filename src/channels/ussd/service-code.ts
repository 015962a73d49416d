/**
 * Service codes as Ferry keeps them: the digits between the leading '*' and the final '#', parts joined by '*'
 * ('*384*12#' → '384*12'). A claim matches a dialled code when its parts are a prefix of the dialled parts; the
 * parts after it pre-fill the session's inputs ('*384*12*3#' on claim '*384*12#' enters with input 3).
 */
const CODE_RE = /^\*?([0-9]{1,6}(?:\*[0-9A-Za-z]{1,20}){0,8})#?$/;

/** The canonical form ('384*12'), or null when the text is not a service code. */
export function canonicalCode(text: string): string | null {
  const m = CODE_RE.exec(text.trim());
  return m ? m[1] : null;
}

/** The dialled form: '*384*12#'. */
export function displayCode(canonical: string): string {
  return `*${canonical}#`;
}

/** The candidate claims of a dialled code, longest first: '384*12*3' → ['384*12*3', '384*12', '384']. */
export function claimCandidates(canonical: string): string[] {
  const parts = canonical.split('*');
  const out: string[] = [];
  for (let n = parts.length; n >= 1; n--) out.push(parts.slice(0, n).join('*'));
  return out;
}

/** The inputs a dialled code pre-fills beyond a claim. */
export function prefilledInputs(dialled: string, claim: string): string[] {
  if (dialled === claim) return [];
  return dialled.slice(claim.length + 1).split('*').filter((s) => s.length > 0);
}

/**
 * Whether two claims overlap: one is the other or extends it, compared part by part ('384' and '384*12' do,
 * '384' and '3841' do not). A code's extensions and parents belong to the account that claims it.
 */
export function codesOverlap(a: string, b: string): boolean {
  const pa = a.split('*');
  const pb = b.split('*');
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) if (pa[i] !== pb[i]) return false;
  return true;
}
