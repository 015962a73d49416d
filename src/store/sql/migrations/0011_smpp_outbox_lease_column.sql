-- A claim used to lease a row by moving next_at, which is indexed: every claim wrote a new entry into each index of
-- smpp_outbox, and the next claims walked those dead entries until a vacuum (thousands per claim at a few thousand
-- receipts a second). The lease now has a column of its own, outside every index, so a claim is a heap-only update
-- whenever the row's page has room, which the free space left on each page provides for part of them (about half when
-- 200 fresh rows are claimed at once). next_at moves only when a delivery is put off.
ALTER TABLE smpp_outbox ADD COLUMN leased_until timestamptz;
ALTER TABLE smpp_outbox SET (fillfactor = 70);
