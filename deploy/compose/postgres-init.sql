-- The forum database is POSTGRES_DB; the reports database that stats-svc and collector-svc
-- share is created here, on the first start of an empty volume.
CREATE DATABASE stats;
