import { createHmac, randomBytes } from 'node:crypto';
import t from 'tap';
import { openBackends } from '../../src/store/backends.js';
import { SqlOtpStore } from '../../src/store/local/sql-otp-store.js';
import { RedisKeys } from '../../src/store/redis/keys.js';
import type { OtpRecord, OtpStore } from '../../src/store/types.js';
import { openTestBackends } from '../helpers/backends.js';
import { backendLabel, DATABASE_URL } from '../helpers/env.js';
import { REDIS_CLUSTER, REDIS_URL, testRedisClient } from '../helpers/redis.js';

const env = await openTestBackends();
t.teardown(() => env.cleanup());
const { clock } = env;
const otp = env.backends.otp;

const MIN = 60_000;
const HOUR = 60 * MIN;
const RULES = { rateLimit: 3, rateWindowMs: HOUR, retainMs: 10 * MIN };
const hash = (code: string) => createHmac('sha256', 'test-key').update(code).digest('hex');
let seq = 0;
const phone = () => `+23320000${String(++seq).padStart(4, '0')}`;

function record(accountId: string, ph: string, now: number, over: Partial<OtpRecord> = {}): OtpRecord {
  return {
    id: `otp_${randomBytes(6).toString('hex')}`,
    accountId,
    phone: ph,
    codeCipher: 'k1:aXY=:dGFn:Y2lwaGVy',
    codeHash: hash('123456'),
    createdAt: now,
    expiresAt: now + 5 * MIN,
    lastSentAt: now,
    maxAttempts: 3,
    attemptsLeft: 3,
    meta: { template: 'Your code is {code}', sender: 'Ferry', n: 1 },
    ...over,
  };
}

function contract(label: string, otp: OtpStore): void {
  t.test(`otp store contract (${label})`, async (t) => {
    t.test('create, get, active, and one active OTP per (account, phone)', async (t) => {
      const now = clock.now;
      const ph = phone();
      const rec = record('acc1', ph, now);
      t.same(await otp.create(rec, { ...RULES, now }), { ok: true });
      t.same(await otp.get(rec.id), rec, 'stored as given');
      t.same(await otp.active('acc1', ph, now + 1000), rec);
      t.equal(await otp.active('acc2', ph, now), null, 'another account');
      t.equal(await otp.get('otp_nope'), null);

      const second = record('acc1', ph, now + 1000);
      t.same(await otp.create(second, { ...RULES, now: now + 1000 }), {
        ok: false,
        reason: 'ACTIVE_OTP_EXISTS',
        retryAfterMs: 5 * MIN - 1000,
        activeId: rec.id,
      });
      t.equal(await otp.get(second.id), null, 'the refused one is not stored');
      t.same(await otp.create(record('acc2', ph, now), { ...RULES, now }), { ok: true }, 'the same phone under another account is separate');
    });

    t.test('of 50 parallel creates for one phone exactly one succeeds', async (t) => {
      const now = clock.now;
      const ph = phone();
      const recs = Array.from({ length: 50 }, () => record('acc1', ph, now));
      const res = await Promise.all(recs.map((r) => otp.create(r, { ...RULES, now })));
      const winners = recs.filter((_, i) => res[i].ok);
      t.equal(winners.length, 1);
      for (const r of res) if (!r.ok) t.same(r, { ok: false, reason: 'ACTIVE_OTP_EXISTS', retryAfterMs: 5 * MIN, activeId: winners[0].id });
      t.equal((await otp.active('acc1', ph, now))?.id, winners[0].id);

      // Again once the phone has a history (its rate row exists: no first insert to queue behind).
      t.equal((await otp.verify('acc1', winners[0].id, hash('123456'), now)).status, 'verified');
      const again = Array.from({ length: 50 }, () => record('acc1', ph, now));
      const res2 = await Promise.all(again.map((r) => otp.create(r, { ...RULES, rateLimit: 100, now })));
      t.equal(res2.filter((r) => r.ok).length, 1, 'one winner the second time too');
    });

    t.test('right code: verified once, then not found, phone free', async (t) => {
      const now = clock.now;
      const ph = phone();
      const rec = record('acc1', ph, now);
      await otp.create(rec, { ...RULES, now });
      const res = await Promise.all(Array.from({ length: 20 }, () => otp.verify(rec.accountId, rec.id, hash('123456'), now + 10)));
      const verified = res.filter((r) => r.status === 'verified');
      t.equal(verified.length, 1, 'exactly one parallel verify wins');
      t.same(verified[0], { status: 'verified', record: rec });
      t.ok(res.every((r) => r.status === 'verified' || r.status === 'not_found'), 'the others find nothing');
      t.same(await otp.verify(rec.accountId, rec.id, hash('123456'), now + 20), { status: 'not_found' });
      t.equal(await otp.get(rec.id), null);
      t.equal(await otp.active('acc1', ph, now + 20), null);
      t.same(await otp.resend(rec.accountId, rec.id, 0, now + 20), { status: 'not_found' });
      t.same(await otp.create(record('acc1', ph, now + 30), { ...RULES, now: now + 30 }), { ok: true }, 'the phone may get a new code');
    });

    t.test('wrong codes use attempts one by one; the last answers invalid with 0 and locks', async (t) => {
      const now = clock.now;
      const ph = phone();
      const rec = record('acc1', ph, now);
      await otp.create(rec, { ...RULES, now });
      const first = await otp.verify(rec.accountId, rec.id, hash('000000'), now + 1);
      t.same(first, { status: 'invalid', attemptsRemaining: 2, record: { ...rec, attemptsLeft: 2 } });
      t.equal((await otp.get(rec.id))?.attemptsLeft, 2);
      t.match(await otp.verify(rec.accountId, rec.id, hash('000001'), now + 2), { status: 'invalid', attemptsRemaining: 1 });
      t.same(await otp.verify(rec.accountId, rec.id, hash('000002'), now + 3), { status: 'invalid', attemptsRemaining: 0, record: { ...rec, attemptsLeft: 0 } }, 'the last attempt answers invalid with 0 (spec §3.1)');
      t.same(await otp.verify(rec.accountId, rec.id, hash('000003'), now + 3), { status: 'locked', record: { ...rec, attemptsLeft: 0 } }, 'a wrong code after it finds it locked');
      t.same(await otp.verify(rec.accountId, rec.id, hash('123456'), now + 4), { status: 'locked', record: { ...rec, attemptsLeft: 0 } }, 'even the right code after that');
      t.same(await otp.resend(rec.accountId, rec.id, 0, now + 4), { status: 'locked' });
      t.equal(await otp.active('acc1', ph, now + 4), null, 'a locked OTP is not active');
      t.equal((await otp.get(rec.id))?.attemptsLeft, 0, 'still readable');
      const next = record('acc1', ph, now + 5);
      t.same(await otp.create(next, { ...RULES, now: now + 5 }), { ok: true }, 'the phone may request a new one');
      t.match(await otp.verify(rec.accountId, rec.id, hash('123456'), now + 6), { status: 'locked', record: { id: rec.id, attemptsLeft: 0 } }, 'the old one stays locked');
      t.equal((await otp.verify(next.accountId, next.id, hash('123456'), now + 6)).status, 'verified');
    });

    t.test('parallel wrong codes are counted exactly', async (t) => {
      const now = clock.now;
      const a = record('acc1', phone(), now, { maxAttempts: 10, attemptsLeft: 10 });
      await otp.create(a, { ...RULES, now });
      const res = await Promise.all(Array.from({ length: 9 }, (_, i) => otp.verify(a.accountId, a.id, hash(`bad${i}`), now + 1)));
      t.same(
        res.map((r) => (r.status === 'invalid' ? r.attemptsRemaining : -1)).sort((x, y) => x - y),
        [1, 2, 3, 4, 5, 6, 7, 8, 9],
        'each wrong attempt saw its own count',
      );
      t.equal((await otp.get(a.id))?.attemptsLeft, 1);

      const b = record('acc1', phone(), now, { maxAttempts: 5, attemptsLeft: 5 });
      await otp.create(b, { ...RULES, now });
      const res2 = await Promise.all(Array.from({ length: 15 }, (_, i) => otp.verify(b.accountId, b.id, hash(`bad${i}`), now + 1)));
      t.same(
        res2.flatMap((r) => (r.status === 'invalid' ? [r.attemptsRemaining] : [])).sort((x, y) => x - y),
        [0, 1, 2, 3, 4],
        'five attempts answer invalid, the fifth with 0',
      );
      t.equal(res2.filter((r) => r.status === 'locked').length, 10, 'the rest find it locked');
    });

    t.test('at most 3 creates per phone per hour (sliding window)', async (t) => {
      const t0 = clock.now;
      const ph = phone();
      const create = async (at: number) => {
        const rec = record('acc1', ph, at);
        const res = await otp.create(rec, { ...RULES, now: at });
        if (res.ok) t.equal((await otp.verify(rec.accountId, rec.id, hash('123456'), at)).status, 'verified');
        return res;
      };
      t.same(await create(t0), { ok: true });
      t.same(await create(t0 + 10 * MIN), { ok: true });
      t.same(await create(t0 + 20 * MIN), { ok: true });
      t.same(await create(t0 + 30 * MIN), { ok: false, reason: 'RATE_LIMIT_EXCEEDED', retryAfterMs: 30 * MIN });
      t.same(await create(t0 + HOUR - 1), { ok: false, reason: 'RATE_LIMIT_EXCEEDED', retryAfterMs: 1 }, 'refused creates are not counted');
      t.same(await create(t0 + HOUR), { ok: true }, 'the first create left the window');
      t.same(await create(t0 + HOUR + 1), { ok: false, reason: 'RATE_LIMIT_EXCEEDED', retryAfterMs: 10 * MIN - 1 });
      t.same(await otp.create(record('acc1', phone(), t0 + HOUR), { ...RULES, now: t0 + HOUR }), { ok: true }, 'other phones are not limited');
    });

    t.test('expiry: verify says expired during retention, then not found', async (t) => {
      const now = clock.now;
      const ph = phone();
      const rec = record('acc1', ph, now);
      await otp.create(rec, { ...RULES, now });
      const expiry = rec.expiresAt;
      t.match(await otp.verify(rec.accountId, rec.id, hash('999999'), expiry - 1), { status: 'invalid' }, 'just before expiry');
      t.same(await otp.verify(rec.accountId, rec.id, hash('123456'), expiry), { status: 'expired' }, 'at expiry, even with the right code');
      t.same(await otp.resend(rec.accountId, rec.id, 0, expiry), { status: 'expired' });
      t.equal(await otp.active('acc1', ph, expiry), null);
      clock.now = expiry + 10 * MIN - 1;
      t.equal((await otp.get(rec.id))?.id, rec.id, 'readable during retention');
      t.same(await otp.create(record('acc1', ph, expiry), { ...RULES, now: expiry }), { ok: true }, 'an expired OTP does not block the phone');
      t.same(await otp.verify(rec.accountId, rec.id, hash('123456'), expiry + 10 * MIN - 1), { status: 'expired' });
      t.same(await otp.verify(rec.accountId, rec.id, hash('123456'), expiry + 10 * MIN), { status: 'not_found' }, 'gone after retention');
      clock.now = expiry + 10 * MIN;
      t.equal(await otp.get(rec.id), null);
      t.same(await otp.resend(rec.accountId, rec.id, 0, expiry + 10 * MIN), { status: 'not_found' });
    });

    t.test('resend only after the cooldown, same id, same expiry', async (t) => {
      const now = clock.now;
      const ph = phone();
      const rec = record('acc1', ph, now);
      await otp.create(rec, { ...RULES, now });
      t.same(await otp.resend(rec.accountId, rec.id, MIN, now + 30_000), { status: 'cooldown', retryAfterMs: 30_000 });
      t.same(await otp.resend(rec.accountId, rec.id, MIN, now + MIN - 1), { status: 'cooldown', retryAfterMs: 1 });
      const ok = await otp.resend(rec.accountId, rec.id, MIN, now + MIN);
      t.same(ok, { status: 'ok', record: { ...rec, lastSentAt: now + MIN } });
      t.same(await otp.resend(rec.accountId, rec.id, MIN, now + MIN + 1), { status: 'cooldown', retryAfterMs: MIN - 1 }, 'cooldown restarts');
      const active = await otp.active('acc1', ph, now + MIN + 1);
      t.equal(active?.id, rec.id, 'still the one active code');
      t.equal(active?.expiresAt, rec.expiresAt, 'expiry unchanged');
      t.equal(active?.lastSentAt, now + MIN);
      t.equal((await otp.verify(rec.accountId, rec.id, hash('123456'), now + MIN + 2)).status, 'verified', 'the same code verifies');
      t.same(await otp.resend('acc1', 'otp_unknown', MIN, now), { status: 'not_found' });
    });

    t.test('activeForPhone: every account\'s live OTP for the phone, newest first', async (t) => {
      const now = clock.now;
      const ph = phone();
      t.same(await otp.activeForPhone(ph, now), [], 'nothing yet');
      const a = record('acc1', ph, now, { expiresAt: now + 10 * MIN });
      const b = record('acc2', ph, now + 1, { createdAt: now + 1, expiresAt: now + 2 * MIN });
      const c = record('acc3', ph, now + 2, { createdAt: now + 2 });
      const other = record('acc1', phone(), now);
      for (const r of [a, b, c, other]) t.same(await otp.create(r, { ...RULES, now: r.createdAt }), { ok: true });
      // A refused create (an OTP is active) with a shorter expiry must not hide the active one.
      t.match(await otp.create(record('acc1', ph, now + 3, { expiresAt: now + MIN }), { ...RULES, now: now + 3 }), { ok: false, reason: 'ACTIVE_OTP_EXISTS' });
      t.same((await otp.activeForPhone(ph, now + 3)).map((r) => r.id), [c.id, b.id, a.id]);
      t.same((await otp.activeForPhone(ph, now + 3))[2], a, 'whole records');

      t.equal((await otp.verify(c.accountId, c.id, hash('123456'), now + 4)).status, 'verified');
      t.same((await otp.activeForPhone(ph, now + 4)).map((r) => r.id), [b.id, a.id], 'verified ones drop out');
      t.same((await otp.activeForPhone(ph, b.expiresAt)).map((r) => r.id), [a.id], 'expired ones drop out');
      t.same((await otp.activeForPhone(ph, now + 2 * MIN)).map((r) => r.id), [a.id], 'after the refused create\'s expiry');
      for (let i = 0; i < 3; i++) await otp.verify(a.accountId, a.id, hash('bad'), now + 5);
      t.same(await otp.activeForPhone(ph, b.expiresAt), [], 'locked ones drop out');
    });

    t.test('a reused id is refused', async (t) => {
      const now = clock.now;
      const rec = record('acc1', phone(), now);
      await otp.create(rec, { ...RULES, now });
      const other = phone();
      await t.rejects(otp.create({ ...rec, phone: other }, { ...RULES, now }));
      t.equal((await otp.get(rec.id))?.phone, rec.phone, 'the first one is untouched');
      t.equal(await otp.active('acc1', other, now), null, 'the refused one left nothing behind: its phone is free');
      t.same(await otp.create(record('acc1', other, now), { ...RULES, now }), { ok: true }, 'and may get a code');
      const again = await otp.create(rec, { ...RULES, now }).catch(() => 'rejected');
      t.notSame(again, { ok: true }, 'the same id and phone again is refused too');
      t.same(await otp.verify(rec.accountId, rec.id, rec.codeHash, now), { status: 'verified', record: rec }, 'the first one still verifies');
    });

    t.test("another account's OTP is not found and left untouched", async (t) => {
      const now = clock.now;
      const ph = phone();
      const rec = record('acc1', ph, now);
      await otp.create(rec, { ...RULES, now });
      t.same(await otp.verify('acc2', rec.id, hash('123456'), now + 1), { status: 'not_found' }, 'the right code, the wrong account');
      t.same(await otp.verify('acc2', rec.id, hash('000000'), now + 1), { status: 'not_found' }, 'a wrong code uses no attempt');
      t.same(await otp.resend('acc2', rec.id, 0, now + MIN), { status: 'not_found' });
      t.same(await otp.get(rec.id), rec, 'attempts and last send unchanged');
      t.equal((await otp.active('acc1', ph, now + 2))?.id, rec.id, 'still active for its account');
      t.equal((await otp.verify(rec.accountId, rec.id, hash('123456'), now + 2)).status, 'verified', 'its own account still verifies it');
    });

    t.test('unknown ids', async (t) => {
      t.same(await otp.verify('acc1', 'otp_missing', hash('1'), clock.now), { status: 'not_found' });
    });
  });
}

contract(backendLabel, otp);
// The SQL store serves deployments on Postgres without Redis: its locks face real concurrent connections there.
if (DATABASE_URL && REDIS_URL) contract('postgres+local: SqlOtpStore', new SqlOtpStore(env.tdb.db, { clock: () => clock.now }));

t.test('Redis: an instance remembers where the OTPs it created or found live; others read the id index', { skip: !REDIS_URL && 'Redis only' }, async (t) => {
  const other = await openBackends({ db: env.tdb.db, redisUrl: REDIS_URL, redisCluster: REDIS_CLUSTER, keyPrefix: env.keyPrefix!, clock: () => clock.now });
  const raw = testRedisClient();
  t.teardown(async () => {
    await other.close();
    await raw.quit();
  });
  const keys = new RedisKeys(env.keyPrefix!);
  const now = clock.now;

  const a = record('acc1', phone(), now);
  t.same(await otp.create(a, { ...RULES, now }), { ok: true });
  t.same(await other.otp.verify('acc1', a.id, hash('000000'), now), { status: 'invalid', attemptsRemaining: 2, record: { ...a, attemptsLeft: 2 } }, 'another instance finds it through the index');
  t.same((await otp.verify('acc1', a.id, a.codeHash, now)).status, 'verified');
  t.same(await other.otp.verify('acc1', a.id, a.codeHash, now), { status: 'not_found' }, 'what the other instance remembered still says not found once it is gone');
  t.equal(await raw.exists(keys.otpIndex(a.id)), 0, 'the index went with the record');

  const b = record('acc1', phone(), now);
  t.same(await otp.create(b, { ...RULES, now }), { ok: true });
  await raw.del(keys.otpIndex(b.id));
  t.same(await other.otp.verify('acc1', b.id, b.codeHash, now), { status: 'not_found' }, 'without the index, an instance that never saw the id cannot find it');
  t.same((await otp.verify('acc1', b.id, b.codeHash, now)).status, 'verified', 'the instance that created it needs no read of the index');
  t.same(await otp.verify('acc1', b.id, b.codeHash, now), { status: 'not_found' }, 'and forgets it once verified');
});
