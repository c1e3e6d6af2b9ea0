-- 0001 drifted from postgres/0001_init.sql: api_keys.key_hash admitted NULL, as a SQLite primary
-- key that is not INTEGER does. SQLite cannot alter a column, so the table is rebuilt with the
-- key NOT NULL; PostgreSQL needs no migration. No table refers to api_keys, so dropping it
-- cascades nowhere; the rows come back through a TEMP copy into a table of the original name.
-- A stored key without a hash fails the migration, which rolls back whole.

CREATE TEMP TABLE api_keys_0002 AS SELECT * FROM api_keys;
DROP TABLE api_keys;

-- API keys: only the SHA-256 (hex) of the key is stored.
CREATE TABLE api_keys (
    key_hash   TEXT     NOT NULL PRIMARY KEY,
    key_type   TEXT     NOT NULL CHECK (key_type IN ('user', 'super', 'guest')),
    user_id    BIGINT   REFERENCES users (user_id),
    scopes     TEXT     NOT NULL DEFAULT '',
    active     BOOLEAN  NOT NULL DEFAULT TRUE,
    expires_at BIGINT,
    created_at BIGINT   NOT NULL,
    CHECK ((key_type = 'user') = (user_id IS NOT NULL))
);
INSERT INTO api_keys (key_hash, key_type, user_id, scopes, active, expires_at, created_at)
    SELECT key_hash, key_type, user_id, scopes, active, expires_at, created_at FROM temp.api_keys_0002;

DROP TABLE temp.api_keys_0002;
