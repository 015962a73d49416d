-- smpp_outbox_account carried id as its last column. A btree serves a condition on a non-leading column by reading
-- the whole index, and the planner costs that as if it could descend: with the few live rows an outbox has while
-- receipts flow, it chose this index over the primary key for `DELETE … WHERE id = ANY(…)` and read every entry of
-- it (about 1,300 pages per delete at 4,000 receipts a second). Without id the index cannot match such a condition,
-- so deletes, releases and deferrals probe the primary key. The claim orders by (next_at, id) still: an incremental
-- sort on id within equal next_at, which the index returns in order.
DROP INDEX smpp_outbox_account;
CREATE INDEX smpp_outbox_account ON smpp_outbox (account_id, next_at);
