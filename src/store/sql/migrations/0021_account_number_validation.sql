-- How strictly an account's recipients are checked (strict: valid for their country; possible: a possible length for
-- their calling code; off: digits only). NULL, the default, leaves it to the route rule and the ingress's default
-- (sms.numberValidation: possible for SMPP, strict for REST).
ALTER TABLE accounts ADD COLUMN number_validation text CHECK (number_validation IN ('strict', 'possible', 'off'));
