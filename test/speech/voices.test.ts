import { execFileSync } from 'node:child_process';
import t from 'tap';
import { EspeakSynthesizer } from '../../src/speech/espeak-synthesizer.js';
import { findVoice, parseEspeakVoices, toBcp47 } from '../../src/speech/voices.js';
import { VOICES_TABLE } from './fixtures/espeak-voices.js';

const hasEspeak = ((): boolean => {
  try {
    execFileSync('sh', ['-c', 'command -v espeak-ng'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
const NEEDS_ESPEAK = hasEspeak ? {} : { skip: 'needs espeak-ng (Debian espeak-ng)' };

t.test('the --voices table parses into BCP 47 voices', async (t) => {
  const voices = parseEspeakVoices(VOICES_TABLE);
  t.equal(voices.length, 16, 'every row, header skipped');
  const us = voices.find((v) => v.id === 'gmw/en-US');
  t.same(us, {
    id: 'gmw/en-US',
    locale: 'en-US',
    alsoServes: [{ locale: 'en', priority: 3 }],
    name: 'English (America)',
    gender: 'male',
    engine: 'espeak-ng',
    quality: 'robotic',
  });
  t.same(
    voices.map((v) => v.locale),
    ['af', 'bpy', 'chr-US-Qaaa-x-west', 'cmn-Latn-pinyin', 'en-GB', 'en-GB-x-rp', 'en-US', 'en-US-nyc', 'es-419', 'fr-BE', 'fr-FR', 'mi', 'sw', 'yue', 'yue', 'xx'],
  );
  t.equal(voices.find((v) => v.locale === 'bpy')?.name, 'Bishnupriya Manipuri', 'a name overflowing its column');
  t.equal(voices.find((v) => v.locale === 'mi')?.id, 'poz/mi', 'a non-ASCII name shifts no column');
  t.same(voices.find((v) => v.locale === 'es-419')?.alsoServes, [{ locale: 'es-MX', priority: 6 }, { locale: 'es', priority: 6 }]);
  t.same(voices.filter((v) => v.locale === 'yue').map((v) => v.id), ['sit/yue', 'sit/yue-Latn-jyutping'], 'same language, two ids');
  t.equal(voices.find((v) => v.id === 'test/xx')?.gender, 'female');
  t.same(parseEspeakVoices('garbage\n\n 5 too short\n'), []);
});

t.test('toBcp47 fixes case only', async (t) => {
  const cases: Array<[string, string]> = [['en-us', 'en-US'], ['fr-fr', 'fr-FR'], ['sw', 'sw'], ['cmn-latn-pinyin', 'cmn-Latn-pinyin'], ['en-gb-x-gbclan', 'en-GB-x-gbclan'], ['vi-vn-x-central', 'vi-VN-x-central'], ['EN-US', 'en-US'], ['hbs', 'hbs']];
  for (const [code, expected] of cases) t.equal(toBcp47(code), expected, code);
});

t.test('findVoice: id, exact locale, then the best voice of the language; never another language', async (t) => {
  const voices = parseEspeakVoices(VOICES_TABLE);
  t.equal(findVoice(voices, 'en-US')?.id, 'gmw/en-US');
  t.equal(findVoice(voices, 'en-us')?.id, 'gmw/en-US', 'any case');
  t.equal(findVoice(voices, 'en-GB')?.id, 'gmw/en');
  t.equal(findVoice(voices, 'gmw/en-GB-x-rp')?.id, 'gmw/en-GB-x-rp', 'by id');
  t.equal(findVoice(voices, 'en')?.id, 'gmw/en', 'en: espeak-ng prefers en-GB (priority 2 over 3)');
  t.equal(findVoice(voices, 'en-NG')?.id, 'gmw/en', 'an unlisted region falls back to the language');
  t.equal(findVoice(voices, 'fr')?.id, 'roa/fr');
  t.equal(findVoice(voices, 'es-MX')?.id, 'roa/es-419', 'a locale served through Other Languages');
  t.equal(findVoice(voices, 'sw-KE')?.id, 'bnt/sw');
  t.equal(findVoice(voices, 'tw-GH'), undefined, 'Twi: no espeak-ng voice');
  t.equal(findVoice(voices, 'ee-GH'), undefined, 'Ewe: no espeak-ng voice');
  t.equal(findVoice(voices, ''), undefined);
});

t.test('the installed catalogue', NEEDS_ESPEAK, async (t) => {
  const engine = new EspeakSynthesizer();
  const voices = await engine.voices();
  t.equal(await engine.voices(), voices, 'loaded once, then the same list');
  const locales = new Set(voices.map((v) => v.locale));
  for (const locale of ['en-US', 'en-GB', 'fr-FR', 'sw', 'de', 'es']) t.ok(locales.has(locale), `has ${locale}`);
  t.notOk([...locales].some((l) => /^(tw|ee|ak)(-|$)/i.test(l)), 'no Twi, Ewe or Akan voice is claimed');
  t.equal(findVoice(voices, 'tw-GH'), undefined);
  t.equal(findVoice(voices, 'ee-GH'), undefined);
  t.ok(voices.every((v) => v.engine === 'espeak-ng' && v.quality === 'robotic'), 'all espeak-ng, all labelled robotic');
  t.equal(new Set(voices.map((v) => v.id)).size, voices.length, 'ids are unique');
  t.ok(voices.length > 50, `${voices.length} voices`);
});
