-- query_sm for overdue receipts (src/smpp/upstream/receipt-query-sweep.ts). A message still 'submitted' past its
-- upstream's receiptQuery.afterSeconds gets a row here when the sweep first finds it, and the row carries its
-- back-off. Kept apart from messages so the sweep neither writes the ledger's rows nor adds an index to them (the
-- submit record stays a heap-only update, see 0014). Rows are few: only messages whose receipt is overdue.
CREATE TABLE receipt_queries (
  message_id text PRIMARY KEY,
  -- The upstream the message was submitted to; its queries go there and count against its rate.
  upstream_id text NOT NULL,
  -- Queries claimed so far (a claim counts before its query_sm is sent).
  attempts integer NOT NULL DEFAULT 0,
  -- Epoch ms when the next query is due; a claimed row is pushed ahead by its lease, so instances sharing the
  -- database never ask twice. NULL: no more queries (answered final, maxAttempts reached, or not answerable).
  next_at bigint,
  created_at bigint NOT NULL
);
-- The claim: due rows of one upstream, oldest due first.
CREATE INDEX receipt_queries_due ON receipt_queries (upstream_id, next_at) WHERE next_at IS NOT NULL;
CREATE INDEX receipt_queries_created ON receipt_queries (created_at);
