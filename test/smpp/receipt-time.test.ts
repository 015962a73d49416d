import t from 'tap';
import { MessageState } from '../../src/smpp/constants.js';
import { formatReceipt, messageIdVariants, normalizeMessageId, parseReceipt } from '../../src/smpp/receipt.js';
import { formatSmppAbsolute, formatSmppRelative, parseSmppTime } from '../../src/smpp/time.js';

t.test('receipt text: format and parse back', async (t) => {
  const text = formatReceipt({
    id: '1a2b3c',
    stat: 'DELIVRD',
    submitDate: new Date(Date.UTC(2024, 2, 5, 9, 7)),
    doneDate: new Date(Date.UTC(2024, 2, 5, 9, 8)),
    text: 'Hello there, this is longer than twenty',
  });
  t.equal(text, 'id:1a2b3c sub:001 dlvrd:001 submit date:2403050907 done date:2403050908 stat:DELIVRD err:000 text:Hello there, this is');
  const r = parseReceipt(text)!;
  t.equal(r.id, '1a2b3c');
  t.equal(r.stat, 'DELIVRD');
  t.equal(r.messageState, MessageState.DELIVERED);
  t.equal(r.submitDate?.toISOString(), '2024-03-05T09:07:00.000Z');
  t.equal(r.err, '000');
  t.equal(r.text, 'Hello there, this is');
});

t.test('receipt text: vendor variations', async (t) => {
  const upper = parseReceipt('ID:0000ABCD SUB:001 DLVRD:000 SUBMIT DATE:240305090712 DONE DATE:240305091015 STAT:UNDELIV ERR:034 Text:hi');
  t.equal(upper?.id, '0000ABCD');
  t.equal(upper?.stat, 'UNDELIV');
  t.equal(upper?.messageState, MessageState.UNDELIVERABLE);
  t.equal(upper?.doneDate?.toISOString(), '2024-03-05T09:10:15.000Z', '12-digit dates carry seconds');
  t.equal(upper?.text, 'hi');
  const sparse = parseReceipt('id:77 stat:expired');
  t.same(sparse, { id: '77', stat: 'EXPIRED', messageState: MessageState.EXPIRED });
  const underscores = parseReceipt('id:9 submit_date:2403050907 done_date:2403050908 stat:DELIVERED err:0');
  t.equal(underscores?.messageState, MessageState.DELIVERED);
  t.ok(underscores?.doneDate);
  const textWithKeys = parseReceipt('id:5 stat:DELIVRD text:stat:FAKE id:6');
  t.equal(textWithKeys?.id, '5');
  t.equal(textWithKeys?.stat, 'DELIVRD');
  t.equal(textWithKeys?.text, 'stat:FAKE id:6');
  t.equal(parseReceipt('no receipt here'), undefined);
  t.equal(parseReceipt('id:1 submit date:9999999999')?.submitDate, undefined, 'impossible date dropped, not thrown');
});

t.test('message id normalisation and hex/decimal variants', async (t) => {
  t.equal(normalizeMessageId(' 000ABcd '), 'abcd');
  t.equal(normalizeMessageId('0000'), '0');
  t.same(messageIdVariants('000FF').sort(), ['255', 'ff'].sort());
  t.ok(messageIdVariants('255').includes('ff'));
  t.same(messageIdVariants('zz-1'), ['zz-1']);
});

t.test('SMPP absolute time with quarter-hour offsets', async (t) => {
  const utc = parseSmppTime('240305120000000+');
  t.equal(utc?.kind, 'absolute');
  t.equal(utc?.date.toISOString(), '2024-03-05T12:00:00.000Z');
  t.equal(parseSmppTime('240305120000304+')?.date.toISOString(), '2024-03-05T11:00:00.300Z', '+04 quarters = UTC+1');
  t.equal(parseSmppTime('240305120000008-')?.date.toISOString(), '2024-03-05T14:00:00.000Z', '-08 quarters = UTC-2');
  const d = new Date(Date.UTC(2024, 11, 31, 23, 30, 15, 700));
  t.equal(formatSmppAbsolute(d), '241231233015700+');
  t.equal(formatSmppAbsolute(d, 4), '250101003015704+');
  t.equal(formatSmppAbsolute(d, -20), '241231183015720-');
  for (const q of [-48, -3, 0, 5, 48]) t.equal(parseSmppTime(formatSmppAbsolute(d, q))?.date.getTime(), d.getTime(), `offset ${q} round-trips`);
  t.equal(parseSmppTime(''), undefined);
  t.equal(parseSmppTime('241331000000000+'), undefined, 'month 13');
  t.equal(parseSmppTime('2403051200000'), undefined);
});

t.test('SMPP relative time', async (t) => {
  const now = new Date(Date.UTC(2024, 0, 31, 0, 0, 0));
  const r = parseSmppTime('000001020304000R', now);
  t.equal(r?.kind, 'relative');
  if (r?.kind === 'relative') {
    t.same(r.relative, { years: 0, months: 0, days: 1, hours: 2, minutes: 3, seconds: 4 });
    t.equal(r.ms, ((24 + 2) * 3600 + 3 * 60 + 4) * 1000);
    t.equal(r.date.toISOString(), '2024-02-01T02:03:04.000Z');
  }
  t.equal(formatSmppRelative(((24 + 2) * 3600 + 3 * 60 + 4) * 1000), '000001020304000R');
  t.equal(formatSmppRelative(48 * 3600 * 1000), '000002000000000R');
  t.equal(formatSmppRelative(400 * 86400 * 1000), '010105000000000R', '400 d = 1 y (365 d) + 1 m (30 d) + 5 d');
});
