"""The Postgres store's schema, made and changed by the bench itself (docs/replicas.md, "Migrations").

`MIGRATIONS` is append-only: each entry is applied once, in order, and recorded in `bench_migrations`.
`apply` runs at every start under a session advisory lock, so replicas starting together queue behind
one another and the first does the work; the others find it done. A server whose schema is newer than
this bench's refuses to start (an old replica must not write a schema it does not know).
"""

from typing import Any

LOCK = 0x62656E6368  # "bench": the advisory lock key the migrations are applied under
TOO_NEW = "the database's schema is version {}, newer than this bench's {}: upgrade this replica"

# Version 1: the lines of the logs. Ids come from one identity column, so they are unique across
# replicas; `bench_append` takes a per-log transaction lock before it draws an id, so ids are also
# committed in order and a reader that keeps the last id it saw never skips a line committed late.
# `bench_logs.generation` changes when a log is replaced (`bench store import`), so readers start over.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE bench_lines (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        log text NOT NULL,
        body bytea NOT NULL
    );
    CREATE INDEX bench_lines_by_log ON bench_lines (log, id);
    CREATE TABLE bench_logs (log text PRIMARY KEY, generation bigint NOT NULL);
    CREATE FUNCTION bench_append(p_log text, p_lines bytea[]) RETURNS bigint LANGUAGE plpgsql AS $$
    DECLARE
        line bytea;
        last bigint;
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtext('bench_lines'), hashtext(p_log));
        FOREACH line IN ARRAY p_lines LOOP
            INSERT INTO bench_lines (log, body) VALUES (p_log, line) RETURNING id INTO last;
        END LOOP;
        RETURN last;
    END
    $$;
    """,
    # Version 2: per-minute caps (a gateway key's `rpm`) shared by every replica: one row per admitted request,
    # counted and trimmed under a per-name transaction lock, on the server's clock.
    """
    CREATE TABLE bench_rates (name text NOT NULL, at double precision NOT NULL);
    CREATE INDEX bench_rates_by_name ON bench_rates (name, at);
    CREATE FUNCTION bench_charge(p_name text, p_cap int, p_window double precision) RETURNS int
    LANGUAGE plpgsql AS $$
    DECLARE
        now_s double precision;
        held int;
        oldest double precision;
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtext('bench_rates'), hashtext(p_name));
        now_s := extract(epoch FROM clock_timestamp());  -- after the lock: no one counted later than now
        DELETE FROM bench_rates WHERE name = p_name AND (at <= now_s - p_window OR at > now_s);
        SELECT count(*), min(at) INTO held, oldest FROM bench_rates WHERE name = p_name;
        IF held >= p_cap THEN
            RETURN floor(oldest + p_window - now_s)::int + 1;
        END IF;
        INSERT INTO bench_rates (name, at) VALUES (p_name, now_s);
        RETURN NULL;
    END
    $$;
    """,
    # Version 3: records kept one per key (route mode's conversations), changed under a per-key transaction lock.
    """
    CREATE TABLE bench_records (
        place text NOT NULL,
        key text NOT NULL,
        body bytea NOT NULL,
        at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (place, key)
    );
    """,
    # Version 4: counts a day (a gateway key's verdicts), one row per name and local date.
    """
    CREATE TABLE bench_days (name text NOT NULL, day text NOT NULL, count int NOT NULL, PRIMARY KEY (name, day));
    """,
    # Version 5: an append notifies `bench_lines` with the log's name at commit, so a replica's readers ask the
    # server only when a log changed.
    """
    CREATE OR REPLACE FUNCTION bench_append(p_log text, p_lines bytea[]) RETURNS bigint LANGUAGE plpgsql AS $$
    DECLARE
        line bytea;
        last bigint;
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtext('bench_lines'), hashtext(p_log));
        FOREACH line IN ARRAY p_lines LOOP
            INSERT INTO bench_lines (log, body) VALUES (p_log, line) RETURNING id INTO last;
        END LOOP;
        PERFORM pg_notify('bench_lines', p_log);
        RETURN last;
    END
    $$;
    """,
    # Version 6: several logs' lines in one transaction and one round trip (a panel seat's ledger and offload
    # lines). Each log is locked as `bench_append` locks it, in name order, so two such appends never wait on
    # each other in a cycle; the lines go in in the order given, and each log is notified once at commit.
    """
    CREATE FUNCTION bench_append_many(p_logs text[], p_lines bytea[]) RETURNS bigint LANGUAGE plpgsql AS $$
    DECLARE
        one text;
        last bigint;
    BEGIN
        FOREACH one IN ARRAY ARRAY(SELECT DISTINCT unnest(p_logs) ORDER BY 1) LOOP
            PERFORM pg_advisory_xact_lock(hashtext('bench_lines'), hashtext(one));
        END LOOP;
        FOR i IN 1 .. coalesce(array_length(p_lines, 1), 0) LOOP
            INSERT INTO bench_lines (log, body) VALUES (p_logs[i], p_lines[i]) RETURNING id INTO last;
        END LOOP;
        FOREACH one IN ARRAY ARRAY(SELECT DISTINCT unnest(p_logs)) LOOP
            PERFORM pg_notify('bench_lines', one);
        END LOOP;
        RETURN last;
    END
    $$;
    """,
    # Version 7: `bench_append_many` that also says, for each line, its id and, in a followed log (the offload
    # log), the id of the line before it (0: none; NULL in another log), read under the log's lock. Every append
    # of a log but `append_log`'s (never a followed log's) takes that lock before it draws an id and holds it to
    # its commit, so a log's ids are committed in id order and no reader will ever find a line of that log
    # between the two: a replica's reader that has read up to the line before may take in the replica's own
    # lines without asking the server (docs/replicas.md).
    """
    CREATE FUNCTION bench_append_listed(p_logs text[], p_lines bytea[], p_followed text[],
                                        OUT ids bigint[], OUT previous bigint[]) LANGUAGE plpgsql AS $$
    DECLARE
        names text[] := ARRAY(SELECT DISTINCT unnest(p_logs) ORDER BY 1);
        lasts bigint[];
        j int;
        last bigint;
    BEGIN
        FOR j IN 1 .. coalesce(array_length(names, 1), 0) LOOP
            PERFORM pg_advisory_xact_lock(hashtext('bench_lines'), hashtext(names[j]));
            IF names[j] = ANY(p_followed) THEN
                lasts[j] := coalesce((SELECT max(id) FROM bench_lines WHERE log = names[j]), 0);
            END IF;
        END LOOP;
        ids := '{}';
        previous := '{}';
        FOR i IN 1 .. coalesce(array_length(p_lines, 1), 0) LOOP
            j := array_position(names, p_logs[i]);
            INSERT INTO bench_lines (log, body) VALUES (p_logs[i], p_lines[i]) RETURNING id INTO last;
            ids := ids || last;
            previous := previous || lasts[j];
            IF lasts[j] IS NOT NULL THEN
                lasts[j] := last;
            END IF;
        END LOOP;
        FOR j IN 1 .. coalesce(array_length(names, 1), 0) LOOP
            PERFORM pg_notify('bench_lines', names[j]);
        END LOOP;
    END
    $$;
    """,
)


def apply(conn: Any) -> int:
    """Bring the schema of `conn`'s database (autocommit) up to date; returns its version."""
    conn.execute("SELECT pg_advisory_lock(%s)", (LOCK,))
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_migrations (version int PRIMARY KEY, "
                     "applied_at timestamptz NOT NULL DEFAULT now())")
        row = conn.execute("SELECT coalesce(max(version), 0) FROM bench_migrations").fetchone()
        version = int(row[0]) if row else 0
        if version > len(MIGRATIONS):
            raise RuntimeError(TOO_NEW.format(version, len(MIGRATIONS)))
        for number in range(version + 1, len(MIGRATIONS) + 1):
            with conn.transaction():
                conn.execute(MIGRATIONS[number - 1])
                conn.execute("INSERT INTO bench_migrations (version) VALUES (%s)", (number,))
        return len(MIGRATIONS)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK,))
