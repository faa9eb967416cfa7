#!/usr/bin/env bash
# Log bytes per insert beside other engines (issue 38's log-bytes target; docs/logging.md, "Log
# bytes beside PostgreSQL, SQLite and RocksDB"): N random 8-byte keys with one 100-byte value,
# one transaction per insert, asynchronous commit where the engine has it, into an empty store
# in memory. Each engine present is measured; a missing one is said and skipped.
#
#   scripts/peer-log-bytes.sh SWIZZLEDB [N]
#
# SWIZZLEDB: a release build of the CLI. N: inserts (default 100000).
# - SwizzleDB: `bench wal --parts overhead --batch 1 --threads 1`, its log-async (begin, insert,
#   commit) and auto-async (`Tree::insert`) rows.
# - SQLite (Python's sqlite3): WAL mode, synchronous=NORMAL, 4 KiB pages, a WITHOUT ROWID table,
#   checkpoints off: the WAL's growth.
# - RocksDB (the Python package rocksdict): unsynced writes, a write buffer larger than the run:
#   the growth of its WAL files (the data is written again later, at flush and compaction).
# - PostgreSQL (initdb, pg_ctl, pgbench on PATH or under /usr/lib/postgresql/*/bin):
#   synchronous_commit=off, a table (k bigint primary key, v bytea), pgbench with one client,
#   after a checkpoint: pg_current_wal_lsn() moved, per row.

set -u
if [ $# -lt 1 ]; then
    sed -n '2,19p' "$0" >&2
    exit 2
fi
SZ=$1
N=${2:-100000}
WORK=$(mktemp -d /dev/shm/peer-log-bytes.XXXXXX)
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT

echo "== SwizzleDB ($("$SZ" --version))"
"$SZ" bench wal --parts overhead --batch 1 --threads 1 --records "$N" --repeat 1 --dir "$WORK/sz" \
    | grep -E "log B/insert|^log-async|^auto-async"

echo "== SQLite"
python3 - "$WORK" "$N" <<'EOF'
import os, random, sqlite3, sys
work, n = sys.argv[1], int(sys.argv[2])
path = os.path.join(work, 'sqlite.db')
db = sqlite3.connect(path, isolation_level=None)
for pragma in ('page_size=4096', 'journal_mode=WAL', 'synchronous=NORMAL', 'wal_autocheckpoint=0'):
    db.execute('PRAGMA ' + pragma)
db.execute('CREATE TABLE kv (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID')
rng = random.Random(1)
value = bytes(rng.getrandbits(8) for _ in range(100))
before = os.path.getsize(path + '-wal')
for _ in range(n):
    db.execute('BEGIN')
    db.execute('INSERT INTO kv VALUES (?, ?)', (rng.getrandbits(64).to_bytes(8, 'big'), value))
    db.execute('COMMIT')
grown = os.path.getsize(path + '-wal') - before
print(f'SQLite {sqlite3.sqlite_version}: {n} inserts, {grown / n:.0f} WAL bytes per insert')
EOF

echo "== RocksDB"
python3 - "$WORK" "$N" <<'EOF'
import glob, os, random, sys
try:
    from rocksdict import Options, Rdict, WriteOptions
except ImportError:
    print('skipped: the Python package rocksdict is not installed (pip install rocksdict)')
    sys.exit(0)
work, n = sys.argv[1], int(sys.argv[2])
path = os.path.join(work, 'rocks')
opts = Options(raw_mode=True)
opts.create_if_missing(True)
opts.set_write_buffer_size(1 << 30)
db = Rdict(path, opts)
wo = WriteOptions()
wo.sync = False
db.set_write_options(wo)
wal = lambda: sum(os.path.getsize(f) for f in glob.glob(path + '/*.log'))
rng = random.Random(1)
value = bytes(rng.getrandbits(8) for _ in range(100))
before = wal()
for _ in range(n):
    db[rng.getrandbits(64).to_bytes(8, 'big')] = value
print(f'RocksDB (rocksdict): {n} inserts, {(wal() - before) / n:.0f} WAL bytes per insert')
db.close()
EOF

echo "== PostgreSQL"
# Debian puts the programs under /usr/lib/postgresql/VERSION/bin (and only wrappers on PATH).
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "${PGBIN:-}/initdb" ] || PGBIN=$(dirname "$(command -v initdb 2>/dev/null || echo /none/initdb)")
if [ ! -x "$PGBIN/initdb" ] || [ ! -x "$PGBIN/pgbench" ]; then
    echo "skipped: PostgreSQL's initdb and pgbench were not found"
    exit 0
fi
as_pg() {
    # initdb refuses to run as root: run as the postgres user where we are root.
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
PGDIR=$WORK/pg
mkdir -p "$PGDIR"
[ "$(id -u)" = 0 ] && chown postgres "$PGDIR"
as_pg "$PGBIN/initdb" -D "$PGDIR/data" >"$PGDIR/initdb.log" 2>&1 || { echo "initdb failed"; exit 1; }
as_pg "$PGBIN/pg_ctl" -D "$PGDIR/data" -w -l "$PGDIR/server.log" \
    -o "-k $PGDIR -p 5499 -c listen_addresses= -c synchronous_commit=off" start >/dev/null
trap 'as_pg "$PGBIN/pg_ctl" -D "$PGDIR/data" stop >/dev/null; rm -rf "$WORK"' EXIT
psql_() { as_pg "$PGBIN/psql" -h "$PGDIR" -p 5499 -d postgres -qAt -c "$1"; }
value=$(python3 -c "import random; r = random.Random(1); print(''.join('%02x' % r.getrandbits(8) for _ in range(100)))")
printf '\\set k random(-4611686018427387903, 4611686018427387903)\nINSERT INTO kv VALUES (:k, %s);\n' \
    "'\\x$value'::bytea" >"$PGDIR/insert.sql"
psql_ "create table kv (k bigint primary key, v bytea)"
psql_ "checkpoint"
from=$(psql_ "select pg_current_wal_lsn()")
as_pg "$PGBIN/pgbench" -h "$PGDIR" -p 5499 -n -c 1 -t "$N" -f "$PGDIR/insert.sql" postgres >"$PGDIR/pgbench.log" 2>&1
rows=$(psql_ "select count(*) from kv")
echo "PostgreSQL $(psql_ 'show server_version'): $rows inserts, $(psql_ "select round(pg_wal_lsn_diff(pg_current_wal_lsn(), '$from') / $rows)") WAL bytes per insert"
