/**
 * 015 on PostgreSQL only (SCL-1): the instances of a cluster and the leases they hold. A lease is
 * generic — `kind` 'session' now, 'bot' for chat-platform polling later — and its `token` grows by
 * one on every change of owner, so a write fenced by an old token can never pass. Expiry is the
 * server's clock (`now()`), never an instance's. A released lease keeps its row (owner NULL) so the
 * next owner's token still grows. SQLite has no counterpart: a cluster needs a shared server.
 */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 15,
  name: 'cluster',
  postgresOnly: true,
  sql: `
    CREATE TABLE cluster_instances (
      instance_id  TEXT NOT NULL,
      epoch        BIGINT PRIMARY KEY,
      name         TEXT,
      url          TEXT,
      started_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
      heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT now(),
      draining     BOOLEAN NOT NULL DEFAULT false,
      stopped_at   TIMESTAMPTZ
    );
    CREATE INDEX cluster_instances_live ON cluster_instances (heartbeat_at) WHERE stopped_at IS NULL;

    CREATE TABLE cluster_leases (
      kind           TEXT NOT NULL,
      name           TEXT NOT NULL,
      owner_instance TEXT,
      owner_epoch    BIGINT,
      token          BIGINT NOT NULL,
      expires_at     TIMESTAMPTZ NOT NULL,
      PRIMARY KEY (kind, name)
    );
    CREATE INDEX cluster_leases_by_owner ON cluster_leases (owner_epoch) WHERE owner_epoch IS NOT NULL;
    CREATE INDEX cluster_leases_by_expiry ON cluster_leases (kind, expires_at);
  `,
};
