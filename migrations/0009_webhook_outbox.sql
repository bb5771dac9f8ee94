-- Webhooks (docs/spec.md section 5.8): the outbox. One row per event and endpoint, inserted in the
-- transaction of the approval transition it reports (src/approvals/store.ts), so an event exists
-- exactly when its transition committed, and survives crashes, restarts and a receiver that is down.
-- The delivery worker of every replica (src/webhooks/worker.ts) claims due rows with
-- FOR UPDATE SKIP LOCKED, posts them, and marks them delivered, or schedules the next attempt, or
-- marks them failed once the retry window (WEBHOOK_RETRY_FOR) has passed.

create table webhook_outbox (
  id              uuid primary key,                  -- UUIDv7, made by the service: the `webhook-id` of every attempt
  endpoint        text not null,                     -- the name of the WEBHOOKS entry it is for
  type            text not null,
  approval_id     uuid not null references approvals (id),
  data            json_object_text not null,         -- the event's `data`: the approval's summary and its link
  created_at      timestamptz not null default now(),-- the transition's time: the event's `timestamp`
  status          text not null default 'pending',
  attempts        integer not null default 0,
  next_attempt_at timestamptz not null default now(),-- when a worker may claim it next (a claim moves it past the attempt)
  last_attempt_at timestamptz,
  last_status     integer,                           -- the receiver's HTTP status at the last attempt; null: no answer
  last_error      text,                              -- why the last attempt failed, never the URL
  delivered_at    timestamptz,

  constraint webhook_outbox_endpoint check (endpoint ~ '^[A-Za-z0-9_.:\[\]-]{1,64}$'),
  constraint webhook_outbox_type check (type in ('approval.created', 'approval.granted', 'approval.denied',
                                                  'approval.expired', 'approval.cancelled', 'approval.consumed')),
  constraint webhook_outbox_status check (status in ('pending', 'delivered', 'failed')),
  constraint webhook_outbox_attempts check (attempts >= 0),
  constraint webhook_outbox_last_status check (last_status between 100 and 599),
  constraint webhook_outbox_last_error check (char_length(last_error) <= 500),
  constraint webhook_outbox_delivered_at check ((status = 'delivered') = (delivered_at is not null))
);

-- What workers claim: pending rows by when they are due.
create index webhook_outbox_due on webhook_outbox (next_attempt_at) where status = 'pending';
-- The admin listing (newest first; ids are UUIDv7) and the sweep, per status.
create index webhook_outbox_failed on webhook_outbox (id desc) where status = 'failed';
create index webhook_outbox_delivered on webhook_outbox (delivered_at) where status = 'delivered';
