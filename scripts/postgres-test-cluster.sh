#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on loopback for the table server's tests (and by hand).
#
#   eval "$(scripts/postgres-test-cluster.sh start [DIR])"   # prints: export FLATLAND_TEST_POSTGRES_URL=…
#   swift test --filter Table
#   scripts/postgres-test-cluster.sh stop [DIR]               # stops it and removes DIR
#
# DIR (default: $TMPDIR/flatland-postgres-test) holds the data directory, the socket and the log.
# PostgreSQL 15 comes from Debian's `postgresql` package, installed when missing (as root, with
# apt-get). initdb refuses to run as root: as root, the cluster runs as the `postgres` user on a
# DIR it owns. It listens on 127.0.0.1 only, on a free port from 55432 up, trusts local
# connections, has C collation (text orders by bytes, as in SQLite), and keeps nothing: fsync
# off, removed by `stop`. `start` on a DIR whose cluster runs prints its URL again.
set -euo pipefail

command=${1:-}
dir=${2:-${TMPDIR:-/tmp}/flatland-postgres-test}
database=flatland_test

say() { echo "postgres-test-cluster: $*" >&2; }

pgbin() {
    local bin
    bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
    if [ -z "$bin" ] && command -v pg_ctl >/dev/null 2>&1; then bin=$(dirname "$(command -v pg_ctl)"); fi
    echo "$bin"
}

# Runs a command as the cluster's owner: `postgres` when we are root, ourselves otherwise.
as_owner() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

free_port() {
    local port
    for port in $(seq 55432 55631); do
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return
        fi
    done
    say "no free port in 55432-55631"
    exit 1
}

start() {
    local bin port
    bin=$(pgbin)
    if [ -z "$bin" ]; then
        if [ "$(id -u)" != 0 ]; then
            say "PostgreSQL is not installed; run: sudo apt-get install -y postgresql"
            exit 1
        fi
        say "installing PostgreSQL (apt-get install postgresql)"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2 \
            || { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >&2; }
        bin=$(pgbin)
    fi
    if [ -f "$dir/url" ] && as_owner "$bin/pg_ctl" -D "$dir/db" status >/dev/null 2>&1; then
        echo "export FLATLAND_TEST_POSTGRES_URL=$(cat "$dir/url")"
        return
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    # The owner must reach DIR through its parents (mktemp -d makes them private to us).
    chmod 755 "$dir" "$(dirname "$dir")"
    if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
    as_owner "$bin/initdb" -D "$dir/db" -A trust -U postgres -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    port=$(free_port)
    as_owner "$bin/pg_ctl" -D "$dir/db" -l "$dir/postgres.log" -w -t 60 start \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
        >&2 || { cat "$dir/postgres.log" >&2; exit 1; }
    as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres "$database"
    echo "postgres://postgres@127.0.0.1:$port/$database" | as_owner tee "$dir/url" >/dev/null
    say "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port, data in $dir"
    echo "export FLATLAND_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:$port/$database"
}

stop() {
    local bin
    bin=$(pgbin)
    if [ -n "$bin" ] && [ -d "$dir/db" ]; then
        as_owner "$bin/pg_ctl" -D "$dir/db" -m immediate stop >&2 || true
    fi
    rm -rf "$dir"
}

case "$command" in
start) start ;;
stop) stop ;;
*)
    echo "usage: $0 start|stop [DIR]" >&2
    exit 2
    ;;
esac
