-- People by name (docs/spec.md section 5.2): the display name a token or an ID token gives (`name`,
-- else `preferred_username`, else `email`) is kept beside the `sub` it labels, for the operator page,
-- the feed and webhooks. It is never used for a decision. Rows written before carry none (null).
alter table approvals add column requester_name name_text;
alter table operator_sessions add column name name_text;
