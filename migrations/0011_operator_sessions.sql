-- Sessions of people signed in to the operator page through the identity provider (OpenID Connect,
-- docs/security.md "Sign-in"). The browser holds a random secret in an HttpOnly cookie; a row is
-- keyed by that secret's SHA-256, so the table holds nothing a browser could present. Signing out
-- deletes the row: a copy of the cookie stops working on every replica at once. Expiry is read by
-- the database clock, like an approval's.

create table operator_sessions (
  id          sha256_text primary key,
  sub         name_text not null,
  team        name_text,
  agent       name_text,
  roles       jsonb not null,
  csrf_token  text not null,
  -- The provider's ID token, sent back as id_token_hint when the person signs out (OpenID Connect
  -- RP-Initiated Logout 1.0).
  id_token    text,
  created_at  timestamptz not null default now(),
  expires_at  timestamptz not null,
  constraint operator_sessions_roles check (jsonb_typeof(roles) = 'array'),
  constraint operator_sessions_csrf check (csrf_token ~ '^[A-Za-z0-9_-]{43}$'),
  constraint operator_sessions_id_token check (length(id_token) <= 16384),
  constraint operator_sessions_lifetime check (expires_at > created_at)
);

-- Each sign-in deletes the sessions that have expired, by this index.
create index operator_sessions_expiry on operator_sessions (expires_at);
