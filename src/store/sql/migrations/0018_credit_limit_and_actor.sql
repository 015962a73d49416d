-- An explicit overdraft per account: debits (admin debits and message debits alike) may take the balance down to
-- -credit_limit_micros and no further. 0, the default, allows no overdraft.
ALTER TABLE accounts ADD COLUMN credit_limit_micros bigint NOT NULL DEFAULT 0 CHECK (credit_limit_micros >= 0);

-- Who made each balance movement: the admin API records the operator (admin/<what the client says it is>@<address>);
-- movements the daemon makes itself (message debits, refunds, voids) default to 'system'. Rows from before this
-- migration stay NULL: who made them was not recorded.
ALTER TABLE account_transactions ADD COLUMN actor text;
ALTER TABLE account_transactions ALTER COLUMN actor SET DEFAULT 'system';
