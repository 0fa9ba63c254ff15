#!/bin/bash
# Entrypoint of the PostgreSQL stand-in: the subset of the official image's
# docker-entrypoint.sh the WebApp chart relies on. On first start (PGDATA
# has no PG_VERSION) it runs initdb with POSTGRES_USER as superuser and
# POSTGRES_PASSWORD as its password, allows password (scram-sha-256) logins
# from any address, creates POSTGRES_DB, runs /docker-entrypoint-initdb.d/
# *.sql and *.sh, and then execs postgres.
set -Eeuo pipefail

# `docker run IMAGE -c x=y` passes server flags.
if [ "${1:0:1}" = '-' ]; then
  set -- postgres "$@"
fi

# file_env VAR [default]: VAR or the content of the file VAR_FILE names.
file_env() {
  local var=$1 file_var="${1}_FILE" def=${2:-}
  if [ -n "${!var:-}" ] && [ -n "${!file_var:-}" ]; then
    echo "error: both $var and $file_var are set" >&2; exit 1
  fi
  local val=$def
  if [ -n "${!var:-}" ]; then val=${!var}; elif [ -n "${!file_var:-}" ]; then val=$(<"${!file_var}"); fi
  export "$var"="$val"
  unset "$file_var"
}

if [ "$1" = postgres ]; then
  # Started as root (plain `docker run --user 0`): prepare the directories
  # and drop to postgres (999), as the official image does with gosu.
  if [ "$(id -u)" = 0 ]; then
    mkdir -p "$PGDATA" /var/run/postgresql
    chown postgres:postgres "$PGDATA" /var/run/postgresql
    chmod 700 "$PGDATA"
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$BASH_SOURCE" "$@"
  fi

  mkdir -p "$PGDATA"
  chmod 700 "$PGDATA" 2>/dev/null || true

  if [ ! -s "$PGDATA/PG_VERSION" ]; then
    file_env POSTGRES_PASSWORD
    file_env POSTGRES_USER postgres
    file_env POSTGRES_DB "$POSTGRES_USER"
    file_env POSTGRES_INITDB_ARGS
    auth=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}
    if [ -z "$POSTGRES_PASSWORD" ] && [ "$auth" != trust ]; then
      cat >&2 <<'MSG'
error: the database is uninitialized and no superuser password is set.
Set POSTGRES_PASSWORD (or POSTGRES_PASSWORD_FILE), or
POSTGRES_HOST_AUTH_METHOD=trust to allow every connection without one.
MSG
      exit 1
    fi

    echo "initialising $PGDATA for user $POSTGRES_USER, database $POSTGRES_DB"
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
    # shellcheck disable=SC2086
    initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust \
      --auth-host="$auth" $POSTGRES_INITDB_ARGS -D "$PGDATA"
    rm -f "$pwfile"
    printf '\n# Added by the image: password logins from any address.\nhost all all all %s\n' "$auth" >> "$PGDATA/pg_hba.conf"

    # A server on the unix socket only, for the set-up steps.
    pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p ${PGPORT:-5432}" -w start
    psql=(psql -v ON_ERROR_STOP=1 --no-psqlrc --username "$POSTGRES_USER" --port "${PGPORT:-5432}" --host /var/run/postgresql)
    if [ "$POSTGRES_DB" != postgres ]; then
      "${psql[@]}" --dbname postgres --set db="$POSTGRES_DB" <<<'CREATE DATABASE :"db";'
    fi
    for f in /docker-entrypoint-initdb.d/*; do
      case $f in
        *.sh) echo "running $f"; . "$f" ;;
        *.sql) echo "running $f"; "${psql[@]}" --dbname "$POSTGRES_DB" -f "$f" ;;
        *) [ -e "$f" ] && echo "ignoring $f" ;;
      esac
    done
    pg_ctl -D "$PGDATA" -m fast -w stop
    echo "PostgreSQL init process complete; ready for start up."
  fi
  unset POSTGRES_PASSWORD
fi

exec "$@"
