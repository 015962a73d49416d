-- The outbound pipeline's workers claim due jobs straight from outbound_jobs (OutboundStore.claimDue: one UPDATE of a
-- provider's due, unclaimed pending jobs, priority lane first, then by next_attempt_at, FOR UPDATE SKIP LOCKED), as
-- webhook delivery claims its retry set; the queues `outbound:<provider>` and the reconciler's re-push are gone.
-- Each lane of a provider is one range of this index, read from its earliest due job; only pending jobs are in it.
-- Building it reads the table once, holding off its writes meanwhile: on a large database run `ferry migrate` in a
-- quiet hour.
CREATE INDEX IF NOT EXISTS outbound_jobs_due ON outbound_jobs (provider, lane, next_attempt_at) WHERE pending;
-- Only the reconciler's pages of every pending job (by id, to push them again) read this one.
DROP INDEX IF EXISTS outbound_jobs_pending;
-- What the embedded SQL queue still held of the outbound queues: nothing reads it any more. (With Redis, the keys
-- `<prefix>{q:outbound:<provider>}:*` are no longer read either; they may be deleted by hand.)
DELETE FROM queue_items WHERE queue LIKE 'outbound:%';
