-- Billing at accept time: debits reference the message id (or the bulk batch id); the orphan sweep looks
-- for recent debits by kind.
CREATE INDEX account_transactions_kind_created ON account_transactions (kind, created_at);
CREATE INDEX account_transactions_reference ON account_transactions (reference) WHERE reference IS NOT NULL;
