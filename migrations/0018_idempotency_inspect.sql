-- POST /inspect's redeem of a result's review takes an Idempotency-Key, kept like /decide's
-- (docs/spec.md section 5.11): a retry whose first answer was lost gets the same allow.
alter table idempotency_keys drop constraint idempotency_keys_route;
alter table idempotency_keys add constraint idempotency_keys_route check (route in ('decide', 'approvals', 'usage', 'inspect'));
