#!/usr/bin/env bash
# Runs each image hack/images builds under the contract its chart gives it
# (user, read-only root filesystem, dropped capabilities, the writable
# mounts, env) and checks it does its job:
#   - the operator image IMG: /manager and /extensions start (--help) as
#     uid 65532 on a read-only root;
#   - nginx: the chart's conf.d (server on 8080 with /healthz, stub_status
#     on 127.0.0.1:8081) as uid 101; the exporter scrapes it;
#   - PostgreSQL as uid 999 with the chart's env and PGDATA, and the WebApp
#     test app as uid 10001: `/` reports the connection, a value written
#     survives removing and re-creating both containers on the same data
#     directory, and a wrong password is refused.
# Containers run without a network of their own (--network none); clients
# join a container's network namespace, so nothing binds a host port.
# Everything started here is removed on exit.
set -euo pipefail

DOCKER=${DOCKER:-docker}
: "${NGINX_STANDIN:?}" "${NGINX_EXPORTER_STANDIN:?}" "${POSTGRES_STANDIN:?}" "${WEBAPP_TEST_APP:?}"
IMG=${IMG:-}
# The HTTP client runs in the Debian stand-in: bash's /dev/tcp (Debian's
# static busybox wget crashes).
CLIENT=${CLIENT:-${DEBIAN_STANDIN:-localhost/standin-debian:bookworm}}

tmp=$(mktemp -d)
containers=()
cleanup() {
  [ ${#containers[@]} -eq 0 ] || $DOCKER rm -f "${containers[@]}" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

pass() { echo "ok   $*"; }
fail() { echo "FAIL $*" >&2; for c in "${containers[@]}"; do echo "--- logs of $c" >&2; $DOCKER logs --tail 30 "$c" >&2 || true; done; exit 1; }

# The restricted security context every chart sets.
restricted=(--read-only --cap-drop ALL --security-opt no-new-privileges)

run() { # name, docker run args...
  local name=$1; shift
  $DOCKER run -d --name "$name" "$@" >/dev/null
  containers+=("$name")
}

# get NETNS_CONTAINER URL: body on stdout; fails unless the answer is 2xx.
get() {
  $DOCKER run --rm --network "container:$1" "$CLIENT" timeout 5 bash -c '
    url=${1#http://}; hostport=${url%%/*}; path=/${url#*/}
    exec 3<>"/dev/tcp/${hostport%:*}/${hostport#*:}" || exit 7
    printf "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" "$path" "$hostport" >&3
    IFS= read -r status <&3
    case $status in "HTTP/1."?" 2"*) ;; *) echo "$status" >&2; exit 8 ;; esac
    while IFS= read -r line <&3 && [ -n "${line%$'"'"'\r'"'"'}" ]; do :; done
    cat <&3' _ "$2"
}
# until SECONDS CMD...: retry CMD every half second.
until_ok() {
  local secs=$1; shift
  local i
  for ((i = 0; i < secs * 2; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  return 1
}

id=smoke-$$

if [ -n "$IMG" ]; then
  $DOCKER run --rm --user 65532:65532 "${restricted[@]}" --network none "$IMG" --help >"$tmp/manager.txt" 2>&1 \
    || fail "$IMG: /manager --help"; pass "$IMG /manager --help as 65532, read-only root"
  $DOCKER run --rm --user 65532:65532 "${restricted[@]}" --network none --entrypoint /extensions "$IMG" --help >"$tmp/ext.txt" 2>&1 \
    || fail "$IMG: /extensions --help"; pass "$IMG /extensions --help as 65532, read-only root"
  [ "$($DOCKER image inspect -f '{{.Config.User}}' "$IMG")" = 65532:65532 ] || fail "$IMG: USER is not 65532:65532"
  $DOCKER run --rm --network none --entrypoint /bin/sh "$IMG" -c true >/dev/null 2>&1 \
    && fail "$IMG has a shell"; pass "$IMG has no shell"
fi

# --- nginx, with the chart's default ConfigMap (helm-charts/nginx/templates/configmap.yaml)
mkdir -p "$tmp/conf.d"
cat > "$tmp/conf.d/default.conf" <<'CONF'
server {
    listen       8080;
    server_name  _;
    server_tokens off;
    root   /usr/share/nginx/html;
    index  index.html;
    location = /healthz {
        access_log off;
        default_type text/plain;
        return 200 "ok\n";
    }
    location / {
        try_files $uri $uri/ =404;
    }
}
CONF
cat > "$tmp/conf.d/status.conf" <<'CONF'
server {
    listen       127.0.0.1:8081;
    server_name  _;
    access_log   off;
    location = /stub_status {
        stub_status;
        allow 127.0.0.1;
        deny all;
    }
}
CONF
chmod -R a+rX "$tmp"
run "$id-nginx" --network none --user 101:101 "${restricted[@]}" \
  -v "$tmp/conf.d:/etc/nginx/conf.d:ro" --tmpfs /tmp --tmpfs /var/cache/nginx "$NGINX_STANDIN"
until_ok 20 get "$id-nginx" http://127.0.0.1:8080/healthz || fail "nginx: /healthz"
[ "$(get "$id-nginx" http://127.0.0.1:8080/healthz)" = ok ] || fail "nginx: /healthz body"
get "$id-nginx" http://127.0.0.1:8080/ | grep -q 'Welcome to nginx' || fail "nginx: /"
get "$id-nginx" http://127.0.0.1:8081/stub_status | grep -q 'Active connections' || fail "nginx: stub_status"
pass "$NGINX_STANDIN: uid 101, read-only root, chart conf.d: /healthz, /, stub_status on 127.0.0.1:8081"

run "$id-exporter" --network "container:$id-nginx" --user 101:101 "${restricted[@]}" "$NGINX_EXPORTER_STANDIN" \
  --nginx.scrape-uri=http://127.0.0.1:8081/stub_status --web.listen-address=:9113 --web.telemetry-path=/metrics
until_ok 20 get "$id-nginx" http://127.0.0.1:9113/metrics || fail "exporter: /metrics"
get "$id-nginx" http://127.0.0.1:9113/metrics | grep -q '^nginx_up 1' || fail "exporter: nginx_up is not 1"
pass "$NGINX_EXPORTER_STANDIN: the chart's flags, nginx_up 1"

# --- PostgreSQL and the WebApp test app (helm-charts/webapp/templates/{database-statefulset,deployment}.yaml)
mkdir -p "$tmp/pgvolume"
chown 0:999 "$tmp/pgvolume"; chmod 2775 "$tmp/pgvolume"   # what fsGroup 999 gives the volume
pgenv=(-e POSTGRES_DB=app -e POSTGRES_USER=app -e POSTGRES_PASSWORD=s3cret-pw -e PGPORT=5432
       -e PGDATA=/var/lib/postgresql/data/pgdata)
probe=(sh -c 'exec pg_isready -h 127.0.0.1 -p "$PGPORT" -U "$POSTGRES_USER" -d "$POSTGRES_DB"')
start_db() { # name
  run "$1" --network none --user 999:999 --group-add 999 "${restricted[@]}" "${pgenv[@]}" \
    -v "$tmp/pgvolume:/var/lib/postgresql/data" --tmpfs /var/run/postgresql --tmpfs /tmp "$POSTGRES_STANDIN"
  until_ok 60 $DOCKER exec "$1" "${probe[@]}" || fail "postgres ($1): the chart's pg_isready probe"
}
start_app() { # name, db container, password
  run "$1" --network "container:$2" --user 10001:10001 "${restricted[@]}" --tmpfs /tmp \
    -e DATABASE_HOST=127.0.0.1 -e DATABASE_PORT=5432 -e DATABASE_NAME=app -e DATABASE_USER=app \
    -e DATABASE_PASSWORD="$3" "$WEBAPP_TEST_APP"
  until_ok 20 get "$2" http://127.0.0.1:8080/healthz || fail "app ($1): /healthz"
}

start_db "$id-db1"
$DOCKER logs "$id-db1" 2>&1 | grep -q 'initialising' || fail "postgres: no initdb on first start"
pass "$POSTGRES_STANDIN: initdb on an empty PGDATA subdirectory, uid 999, read-only root, pg_isready probe"
start_app "$id-app1" "$id-db1" s3cret-pw
body=$(get "$id-db1" http://127.0.0.1:8080/) || fail "app: / (database connection)"
[[ $body == "connected to app as app on 127.0.0.1:5432" ]] || fail "app: / said: $body"
pass "$WEBAPP_TEST_APP: uid 10001, read-only root: $body"
value=kept-$RANDOM
get "$id-db1" "http://127.0.0.1:8080/write?v=$value" >/dev/null || fail "app: /write"
[ "$(get "$id-db1" http://127.0.0.1:8080/read)" = "$value" ] || fail "app: /read after /write"
pass "app: /write?v=$value then /read"

$DOCKER rm -f "$id-app1" "$id-db1" >/dev/null
containers=("${containers[@]/$id-app1}"); containers=("${containers[@]/$id-db1}")
start_db "$id-db2"
$DOCKER logs "$id-db2" 2>&1 | grep -q 'initialising' && fail "postgres: initdb ran again on existing data"
start_app "$id-app2" "$id-db2" s3cret-pw
[ "$(get "$id-db2" http://127.0.0.1:8080/read)" = "$value" ] || fail "app: /read after re-creating database and app"
pass "data survives removing and re-creating both containers on the same volume"

run "$id-app3" --network "container:$id-db2" --user 10001:10001 "${restricted[@]}" --tmpfs /tmp -e PORT=8090 \
  -e DATABASE_HOST=127.0.0.1 -e DATABASE_PORT=5432 -e DATABASE_NAME=app -e DATABASE_USER=app \
  -e DATABASE_PASSWORD=wrong "$WEBAPP_TEST_APP"
until_ok 20 get "$id-db2" http://127.0.0.1:8090/healthz || fail "app with wrong password: /healthz"
get "$id-db2" http://127.0.0.1:8090/ >/dev/null 2>&1 && fail "app with a wrong password got through"
$DOCKER logs "$id-app3" 2>&1 | grep -q 'password authentication failed' || fail "app with wrong password: no auth error logged"
pass "a wrong password is refused (scram-sha-256 over TCP)"
echo "all images pass"
