"""The PostgreSQL store's schema, versioned: a chain of migrations, one per version step.

``MIGRATIONS[n]`` is the SQL that brings a database from version ``n - 1`` to ``n``; the
version lives in ``orchestrator_meta``. ``ensure_schema`` applies the missing steps under a
transaction-scoped advisory lock (two first calls on an empty database do not race), and a
database whose version is newer than this code fails closed (``StoreUnavailable``, exit 4):
an old orchestrator never writes rows it does not understand.
"""

from __future__ import annotations

from typing import Any

from workspace.pgerrors import StoreUnavailable, mask_url, unavailable

SCHEMA_VERSION = 4
MIGRATION_LOCK = 7_201_022  # the advisory lock key that serialises migrations

MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE IF NOT EXISTS orchestrator_meta (key text PRIMARY KEY, value text NOT NULL);
    CREATE TABLE flows (
        flow_id text PRIMARY KEY,
        workflow text,
        state bytea NOT NULL,
        revision integer NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        spec bytea,
        spec_sha text,
        last_error bytea
    );
    CREATE TABLE audit (
        id bigserial PRIMARY KEY,
        flow_id text NOT NULL,
        revision integer,
        record bytea NOT NULL,
        at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX audit_by_flow ON audit (flow_id, id);
    CREATE TABLE locks (
        flow_id text PRIMARY KEY,
        fence bigint NOT NULL,
        host text, pid integer, command jsonb, since timestamptz, backend integer
    );
    CREATE TABLE campaigns (
        name text PRIMARY KEY,
        kind text NOT NULL,
        lease_s double precision NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE campaign_items (
        campaign text NOT NULL REFERENCES campaigns (name),
        item_id text NOT NULL,
        position integer NOT NULL,
        payload jsonb NOT NULL,
        state text NOT NULL DEFAULT 'free',
        token bigint NOT NULL DEFAULT 0,
        holder text, holder_host text, holder_pid integer,
        leased_at timestamptz, lease_until timestamptz,
        claims integer NOT NULL DEFAULT 0,
        done_count integer NOT NULL DEFAULT 0,
        last_error text, result jsonb, done_at timestamptz, flow_id text,
        PRIMARY KEY (campaign, item_id)
    );
    CREATE INDEX campaign_items_free ON campaign_items (campaign, state, position);
    CREATE INDEX campaign_items_flow ON campaign_items (flow_id);
    """,
    # A flow's outputs (verdicts, reports, summaries, accepted feeds: ``pgstore.outputs``)
    # beside its state, and the workspace root its state's paths were written under.
    2: """
    ALTER TABLE flows ADD COLUMN root text;
    -- the worker that last gave an item back for lack of what its flow needs, and until when
    -- it is not offered that item again
    ALTER TABLE campaign_items ADD COLUMN refused_by text;
    ALTER TABLE campaign_items ADD COLUMN refused_until timestamptz;
    CREATE TABLE artifacts (
        flow_id text NOT NULL,
        name text NOT NULL,
        data bytea NOT NULL,
        sha text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (flow_id, name)
    );
    """,
    # Each holder's own lease length (its ORCHESTRATOR_LEASE_S; NULL: the campaign's), the
    # most claims an item may take before it is parked for a person, and when it was parked.
    3: """
    ALTER TABLE campaign_items ADD COLUMN lease_s double precision;
    ALTER TABLE campaign_items ADD COLUMN parked_at timestamptz;
    """,
    # The lock holder's heartbeat (``workspace.pgbeat``): a holder silent too long (its
    # machine gone, its process stopped) has its session ended by the next caller. The
    # items still to take in their order, so a claim reads the first of them, not every
    # done item of a long campaign.
    4: """
    ALTER TABLE locks ADD COLUMN alive_at timestamptz;
    CREATE INDEX campaign_items_open ON campaign_items (campaign, position)
        WHERE state IN ('free', 'leased');
    """,
}


def ensure_schema(conn: Any, url: str, known: int = SCHEMA_VERSION) -> int:
    """Bring the database to ``known`` (the code's version); refuse a newer one."""
    import psycopg

    try:
        version = _version(conn)
        if version == known:
            return version
        if version is not None and version > known:
            raise _newer(url, version, known)
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            conn.execute("CREATE TABLE IF NOT EXISTS orchestrator_meta "
                         "(key text PRIMARY KEY, value text NOT NULL)")
            version = _version(conn) or 0
            if version > known:
                raise _newer(url, version, known)
            for step in range(version + 1, known + 1):
                conn.execute(MIGRATIONS[step])
            conn.execute("INSERT INTO orchestrator_meta VALUES ('schema_version', %s) "
                         "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", (str(known),))
        return known
    except psycopg.Error as exc:
        raise unavailable(url, exc, "checking the schema") from None


def _version(conn: Any) -> int | None:
    import psycopg

    try:  # a plain autocommit read: no transaction of its own on the hot path
        row = conn.execute("SELECT value FROM orchestrator_meta "
                           "WHERE key = 'schema_version'").fetchone()
    except psycopg.errors.UndefinedTable:
        if not conn.autocommit:
            conn.rollback()
        return None
    return int(row[0]) if row else None


def _newer(url: str, version: int, known: int) -> StoreUnavailable:
    return StoreUnavailable(
        f"the PostgreSQL store {mask_url(url)!r} has schema version {version}, newer than this "
        f"orchestrator knows ({known})",
        "upgrade skill-orchestrator on this machine to the release the rest of the fleet runs; "
        "nothing was read or written", code="store_newer", store=mask_url(url))
