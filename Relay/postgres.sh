#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL cluster: installs Debian's `postgresql` if
# `initdb` is missing, initializes a cluster as the `postgres` user (initdb refuses root)
# in a temporary directory, starts it on 127.0.0.1 on a free port, creates a database,
# and runs the command with
#   CONVERGE_POSTGRES_URL   postgres://postgres@127.0.0.1:PORT/converge
#   CONVERGE_POSTGRES_CTL   a script running pg_ctl on that cluster as `postgres` (the
#                           fault tests restart the database with
#                           `"$CONVERGE_POSTGRES_CTL" restart -m fast -w`),
# then stops the cluster and removes it, however the command ends.
# Usage: Relay/postgres.sh COMMAND [ARGUMENTS…]   (must run as root, as CI does)
set -euo pipefail

find_bin() {
  local found
  found="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
  if [ -n "$found" ] && [ -x "$found/initdb" ]; then
    echo "$found"
  fi
}

bin="$(find_bin)"
if [ -z "$bin" ]; then
  echo "postgres.sh: installing Debian's postgresql"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql >/dev/null
  bin="$(find_bin)"
fi
if [ -z "$bin" ]; then
  echo "postgres.sh: no PostgreSQL binaries after installing postgresql" >&2
  exit 1
fi

cluster="$(mktemp -d)"
chown postgres:postgres "$cluster"
data="$cluster/data"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"

as_postgres() { (cd "$cluster" && runuser -u postgres -- "$@"); }

stop() {
  as_postgres "$bin/pg_ctl" -D "$data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$cluster"
}
trap stop EXIT

as_postgres "$bin/initdb" -D "$data" -U postgres --auth=trust --no-sync >/dev/null
as_postgres "$bin/pg_ctl" -D "$data" -l "$cluster/log" \
  -o "-c listen_addresses=127.0.0.1 -p $port -k $cluster -c max_connections=200" -w start >/dev/null
as_postgres "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres converge

# The server a restart starts would inherit the caller's open descriptors and hold them
# for good (Foundation's Process then never sees pg_ctl exit): close all but 0–2.
cat >"$cluster/pg_ctl" <<SCRIPT
#!/usr/bin/env bash
for fd in \$(ls /proc/\$\$/fd); do [ "\$fd" -gt 2 ] && eval "exec \$fd>&-"; done
cd "$cluster" && exec runuser -u postgres -- "$bin/pg_ctl" -D "$data" -l "$cluster/log" "\$@" </dev/null
SCRIPT
chmod 755 "$cluster/pg_ctl"

export CONVERGE_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/converge"
export CONVERGE_POSTGRES_CTL="$cluster/pg_ctl"
echo "postgres.sh: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port"
"$@"
