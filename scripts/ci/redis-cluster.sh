#!/usr/bin/env bash
# A real Redis Cluster on 127.0.0.1 for the tests and CI: six redis-server processes (three masters, three replicas)
# on BASE_PORT..BASE_PORT+5 (cluster bus on port+10000), everything in /tmp/ferry-redis-cluster-BASE_PORT/.
#
#   scripts/ci/redis-cluster.sh start  [BASE_PORT]   starts and creates it, waits until healthy, prints the seed URL
#   scripts/ci/redis-cluster.sh status [BASE_PORT]   prints each node; exit 0 only when healthy
#   scripts/ci/redis-cluster.sh stop   [BASE_PORT]   kills the nodes and removes the folder
#
# Healthy: every node says cluster_state:ok, knows all six nodes and sees all 16384 slots served, every master has a
# replica whose replication link is up, and CLUSTER SHARDS calls every node online (only then is a replica listed in
# CLUSTER SLOTS, where clients look for it). `start` on a healthy cluster only prints the seed URL; on one that is not
# healthy it stops it and starts afresh. Each node's settings are in its folder's redis.conf, so a killed node comes
# back with `redis-server /tmp/ferry-redis-cluster-BASE_PORT/PORT/redis.conf` (test/helpers/redis-cluster.ts does that).
set -euo pipefail

NODES=6
WAIT_SECONDS=30
# Small, so that a failover takes a few seconds (a replica takes over after about twice this).
NODE_TIMEOUT_MS=2000

usage() {
  echo "usage: $0 start|stop|status [BASE_PORT]  (default 16600; nodes on BASE_PORT..BASE_PORT+5, bus +10000; keep both below 32768)" >&2
  exit 2
}

[ $# -ge 1 ] && [ $# -le 2 ] || usage
action="$1"
base="${2:-16600}"
[[ "$base" =~ ^[0-9]+$ ]] || usage
# The bus port (port+10000) of the last node must be a valid port too.
if [ "$base" -lt 1024 ] || [ "$base" -gt $((55000 - NODES + 1)) ]; then
  echo "redis-cluster: BASE_PORT must be between 1024 and $((55000 - NODES + 1)), not $base" >&2
  exit 2
fi
root="/tmp/ferry-redis-cluster-$base"
ports=()
for ((i = 0; i < NODES; i++)); do ports+=($((base + i))); done

fail() {
  echo "redis-cluster: $*" >&2
  exit 1
}

cli() { # port args...: one command to one node, bounded so a hung node cannot hang the script
  local port="$1"
  shift
  timeout 5 redis-cli -h 127.0.0.1 -p "$port" "$@" 2>/dev/null
}

port_in_use() { # port: whether anything accepts connections on it
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# The pid in a node's pidfile, only if that process is still a redis-server of this port (a pid can be reused).
node_pid() { # port
  local pidfile="$root/$1/redis.pid" pid
  [ -f "$pidfile" ] || return 1
  pid="$(cat "$pidfile" 2>/dev/null)" || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "redis-server.*:$1\b" || return 1
  echo "$pid"
}

# Why the cluster is not healthy, one line; nothing (and status 0) when it is.
unhealthy() {
  local port info nodes masters replica_of m link role online
  for port in "${ports[@]}"; do
    info="$(cli "$port" CLUSTER INFO | tr -d '\r')" || { echo "127.0.0.1:$port does not answer"; return 1; }
    grep -qx 'cluster_state:ok' <<<"$info" || { echo "127.0.0.1:$port: $(grep cluster_state <<<"$info")"; return 1; }
    grep -qx "cluster_known_nodes:$NODES" <<<"$info" || { echo "127.0.0.1:$port: $(grep cluster_known_nodes <<<"$info")"; return 1; }
    grep -qx 'cluster_slots_ok:16384' <<<"$info" || { echo "127.0.0.1:$port: $(grep cluster_slots_ok <<<"$info")"; return 1; }
    nodes="$(cli "$port" CLUSTER NODES | tr -d '\r')" || { echo "127.0.0.1:$port does not answer"; return 1; }
    # Masters serving slots, as this node sees them; each needs a replica it does not consider failed.
    masters="$(awk '$3 ~ /master/ && $3 !~ /fail/ && NF >= 9 { print $1 }' <<<"$nodes")"
    [ "$(wc -w <<<"$masters")" -eq 3 ] || { echo "127.0.0.1:$port sees $(wc -w <<<"$masters") masters serving slots, not 3"; return 1; }
    for m in $masters; do
      replica_of="$(awk -v m="$m" '$3 ~ /slave/ && $3 !~ /fail/ && $4 == m && $8 == "connected"' <<<"$nodes")"
      [ -n "$replica_of" ] || { echo "127.0.0.1:$port: master $m has no replica attached"; return 1; }
    done
    # A replica appears in CLUSTER SLOTS (what clients read) only once its replication offset is not 0 any more;
    # CLUSTER SHARDS says "loading" until then.
    online="$(cli "$port" CLUSTER SHARDS | tr -d '\r' | awk 'prev == "health" && $0 == "online" { n++ } { prev = $0 } END { print n + 0 }')" ||
      { echo "127.0.0.1:$port does not answer"; return 1; }
    [ "$online" -eq "$NODES" ] || { echo "127.0.0.1:$port sees $online of $NODES nodes online in CLUSTER SHARDS"; return 1; }
    role="$(cli "$port" ROLE | head -1)" || { echo "127.0.0.1:$port does not answer"; return 1; }
    if [ "$role" = slave ]; then
      link="$(cli "$port" INFO replication | tr -d '\r' | grep '^master_link_status:' || true)"
      [ "$link" = "master_link_status:up" ] || { echo "127.0.0.1:$port: replica ${link:-without master_link_status}"; return 1; }
    fi
  done
  return 0
}

stop_nodes() {
  local port pid pids=()
  for port in "${ports[@]}"; do
    if pid="$(node_pid "$port")"; then
      pids+=("$pid")
      kill "$pid" 2>/dev/null || true
    fi
  done
  # SIGTERM makes a node save nothing here (save "" and no AOF), so it is quick; SIGKILL whatever is left after 10 s.
  for _ in $(seq 1 100); do
    local alive=()
    for pid in "${pids[@]}"; do
      if kill -0 "$pid" 2>/dev/null; then alive+=("$pid"); fi
    done
    pids=("${alive[@]}")
    if [ ${#pids[@]} -eq 0 ]; then break; fi
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  rm -rf "$root"
}

print_status() {
  local port role
  for port in "${ports[@]}"; do
    if ! role="$(cli "$port" ROLE | head -1)"; then
      echo "127.0.0.1:$port down"
      continue
    fi
    echo "127.0.0.1:$port $role $(cli "$port" CLUSTER INFO | tr -d '\r' | grep '^cluster_state:')"
  done
}

logs_tail() {
  local port
  for port in "${ports[@]}"; do
    if [ -f "$root/$port/redis.log" ]; then
      echo "--- 127.0.0.1:$port redis.log"
      tail -n 4 "$root/$port/redis.log"
    fi
  done >&2
}

# Starts one node and waits until it answers. The default ports (16600.., bus 26600..) lie below the kernel's ephemeral
# range (32768-60999 by default); a base inside it lets any client socket on the machine hold a node's port or bus port
# for as long as its connection lives (a CI run once lost a restarted node that way). A node that could not bind is
# still tried again, for ports some other program holds briefly.
start_node() { # port
  local port="$1" attempt pid
  for attempt in 1 2 3 4 5; do
    : >"$root/$port/redis.log"
    rm -f "$root/$port/redis.pid"
    # daemonize yes: the parent returns once the server forked. The pidfile comes only after a successful bind; the
    # log's first lines name the forked process at once ("pid=N, just started"), so a server that aborted shows.
    redis-server "$root/$port/redis.conf" || fail "redis-server on 127.0.0.1:$port did not start"
    for _ in $(seq 1 $((WAIT_SECONDS * 10))); do
      [ "$(cli "$port" PING)" = "PONG" ] && return 0
      pid="$(grep -m1 -o 'pid=[0-9]*, just started' "$root/$port/redis.log" | tr -dc 0-9)" || pid=""
      [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null && break
      sleep 0.1
    done
    if grep -q 'Address already in use' "$root/$port/redis.log" && [ "$attempt" -lt 5 ]; then
      echo "redis-cluster: 127.0.0.1:$port: $(grep -m1 'Address already in use' "$root/$port/redis.log" | sed 's/^.*# //'); trying again" >&2
      sleep 1
      continue
    fi
    fail "127.0.0.1:$port did not start: $(tail -n 1 "$root/$port/redis.log" | sed 's/^.*[#*] //')"
  done
}

start() {
  command -v redis-server >/dev/null || fail "redis-server is not installed (Debian: redis-server)"
  command -v redis-cli >/dev/null || fail "redis-cli is not installed (Debian: redis-tools)"
  if [ -d "$root" ]; then
    if unhealthy >/dev/null; then
      echo "redis://127.0.0.1:$base"
      return 0
    fi
    echo "redis-cluster: $root holds a cluster that is not healthy ($(unhealthy || true)); starting afresh" >&2
    stop_nodes
  fi
  local port
  for port in "${ports[@]}"; do
    port_in_use "$port" && fail "127.0.0.1:$port is in use by another process"
    port_in_use $((port + 10000)) && fail "127.0.0.1:$((port + 10000)) (the cluster bus of $port) is in use by another process"
  done
  # Leave nothing behind when starting fails halfway.
  trap 'rc=$?; set +e; if [ $rc -ne 0 ]; then logs_tail; stop_nodes; fi' EXIT
  for port in "${ports[@]}"; do
    mkdir -p "$root/$port"
    cat >"$root/$port/redis.conf" <<EOF
port $port
bind 127.0.0.1
dir $root/$port
daemonize yes
pidfile $root/$port/redis.pid
logfile $root/$port/redis.log
cluster-enabled yes
cluster-config-file nodes.conf
cluster-node-timeout $NODE_TIMEOUT_MS
# A replica may always take over, however long it was disconnected: the tests kill masters on purpose.
cluster-replica-validity-factor 0
# The master's pings move the replication offset; a replica counts as available (CLUSTER SLOTS) once it is not 0.
repl-ping-replica-period 1
save ""
appendonly no
EOF
    start_node "$port"
  done
  local addrs=() out
  for port in "${ports[@]}"; do addrs+=("127.0.0.1:$port"); done
  out="$(timeout 60 redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes 2>&1)" ||
    { echo "$out" >&2; fail "redis-cli --cluster create failed"; }
  local why="" deadline=$((SECONDS + WAIT_SECONDS))
  while [ $SECONDS -lt $deadline ]; do
    why="$(unhealthy)" && break
    sleep 0.2
  done
  [ -z "$why" ] || { print_status >&2; fail "not healthy within $WAIT_SECONDS s: $why"; }
  trap - EXIT
  echo "redis://127.0.0.1:$base"
}

case "$action" in
  start) start ;;
  stop) stop_nodes ;;
  status)
    print_status
    why="$(unhealthy)" || fail "not healthy: $why"
    ;;
  *) usage ;;
esac
