/**
 * 017 on PostgreSQL only (SCL-1, issue 14): control requests relayed between the instances of a
 * cluster (docs/cluster.md, "Controls on any instance"). A prompt answer or an interrupt received
 * by an instance that does not run the session's turn is written here for the lease owner
 * (`target_epoch`), which claims it once, executes it as a local call and writes the `answer`.
 * Rows live for seconds: past `expires_at` nobody executes them, and they are deleted soon after.
 */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 17,
  name: 'control_requests',
  postgresOnly: true,
  sql: `
    CREATE TABLE control_requests (
      id            BIGSERIAL PRIMARY KEY,
      sender_epoch  BIGINT NOT NULL,
      target_epoch  BIGINT NOT NULL,
      logical_id    TEXT NOT NULL,
      kind          TEXT NOT NULL,
      body          TEXT NOT NULL,
      created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
      expires_at    TIMESTAMPTZ NOT NULL,
      claimed_at    TIMESTAMPTZ,
      answer        TEXT
    );
    CREATE INDEX control_requests_unclaimed ON control_requests (target_epoch) WHERE claimed_at IS NULL;
    CREATE INDEX control_requests_by_expiry ON control_requests (expires_at);
  `,
};
