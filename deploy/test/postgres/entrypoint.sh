#!/bin/sh
# initdb on an empty data directory, with the user, password and database
# of the official image's variables; then the server on every address.
set -eu
user="${POSTGRES_USER:-postgres}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile="${POSTGRES_PASSWORD_FILE:-}"
  if [ -z "$pwfile" ]; then
    pwfile=$(mktemp -p "$PGDATA" .pw.XXXXXX)
    printf '%s\n' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE is required}" > "$pwfile"
  fi
  initdb --username="$user" --pwfile="$pwfile" --auth-host=scram-sha-256 --auth-local=trust -D "$PGDATA" >/dev/null
  rm -f "$PGDATA"/.pw.*
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  db="${POSTGRES_DB:-$user}"
  if [ "$db" != postgres ]; then
    echo "CREATE DATABASE \"$db\" OWNER \"$user\";" | postgres --single -D "$PGDATA" postgres >/dev/null
  fi
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/var/run/postgresql "$@"
