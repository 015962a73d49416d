import type { SpeechVoice, VoiceGender } from './speech-engine.js';

/**
 * The espeak-ng voice catalogue, from the table `espeak-ng --voices` prints:
 *
 *   Pty Language       Age/Gender VoiceName          File                 Other Languages
 *    2  en-us           --/M      English_(America)  gmw/en-US            (en 3)
 *
 * Columns are split on whitespace, not widths: long names overflow their column (and espeak-ng writes spaces in
 * names as underscores, so a name is one word).
 */

export const ESPEAK_ENGINE_ID = 'espeak-ng';

export function parseEspeakVoices(table: string): SpeechVoice[] {
  const voices: SpeechVoice[] = [];
  const seen = new Set<string>();
  for (const line of table.split('\n')) {
    const columns = line.trim().split(/\s+/);
    if (columns.length < 5 || !/^\d+$/.test(columns[0])) continue;
    const [, language, ageGender, name, file] = columns;
    if (seen.has(file)) continue;
    seen.add(file);
    voices.push({
      id: file,
      locale: toBcp47(language),
      alsoServes: parseOtherLanguages(columns.slice(5).join(' ')),
      name: name.replace(/_/g, ' '),
      gender: parseGender(ageGender),
      engine: ESPEAK_ENGINE_ID,
      quality: 'robotic',
    });
  }
  return voices;
}

/** "(en 3)(en-gb 9)" → [{ en, 3 }, { en-GB, 9 }]. */
function parseOtherLanguages(text: string): SpeechVoice['alsoServes'] {
  const out: SpeechVoice['alsoServes'] = [];
  for (const match of text.matchAll(/\(([A-Za-z0-9-]+)\s+(\d+)\)/g)) {
    out.push({ locale: toBcp47(match[1]), priority: Number(match[2]) });
  }
  return out;
}

function parseGender(ageGender: string): VoiceGender {
  const gender = ageGender.split('/')[1];
  return gender === 'M' ? 'male' : gender === 'F' ? 'female' : 'unknown';
}

/**
 * espeak-ng's lower-case codes in BCP 47's conventional case: "en-us" → "en-US", "cmn-latn-pinyin" →
 * "cmn-Latn-pinyin", "en-gb-x-rp" → "en-GB-x-rp". Case only: Intl's canonicalisation would also rename codes
 * (cmn → zh, hbs → sr-Latn) and refuses some espeak-ng uses (en-us-nyc).
 */
export function toBcp47(code: string): string {
  const subtags = code.toLowerCase().split('-');
  const privateUse = subtags.indexOf('x');
  return subtags
    .map((tag, i) => {
      if (i === 0 || (privateUse >= 0 && i > privateUse)) return tag;
      if (/^[a-z]{2}$/.test(tag)) return tag.toUpperCase();
      if (/^[a-z]{4}$/.test(tag)) return tag[0].toUpperCase() + tag.slice(1);
      return tag;
    })
    .join('-');
}

/**
 * The best voice for `wanted` (a voice id or a BCP 47 locale, any case): the voice with that id; else the voice of
 * exactly that locale; else the one that serves it (or, for "xx-YY", its language "xx") with the best priority.
 * Undefined when none serves the language: never a voice of another language.
 */
export function findVoice(voices: readonly SpeechVoice[], wanted: string): SpeechVoice | undefined {
  const byId = voices.find((v) => v.id === wanted);
  if (byId) return byId;
  const locale = toBcp47(wanted).toLowerCase();
  const exact = voices.find((v) => v.locale.toLowerCase() === locale);
  if (exact) return exact;
  const language = locale.split('-')[0];
  let best: { voice: SpeechVoice; rank: number } | undefined;
  for (const voice of voices) {
    for (const { locale: served, priority } of [{ locale: voice.locale, priority: 50 }, ...voice.alsoServes]) {
      const s = served.toLowerCase();
      // A voice serving the exact locale outranks any serving only the language.
      const rank = s === locale ? priority : s === language ? 100 + priority : Infinity;
      if (rank < (best?.rank ?? Infinity)) best = { voice, rank };
    }
  }
  return best?.voice;
}
