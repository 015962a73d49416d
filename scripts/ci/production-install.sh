#!/usr/bin/env bash
# The documented production install, as written: the production-install block of docs/operations.md (and the same commands in
# the systemd unit's comment) run on a fresh clone of this commit; the result must start with dev dependencies gone.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/ferry-production-install.XXXXXX)"
daemon=""
cleanup() {
  local rc=$?
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT

commands="$(awk '/<!-- production-install:start -->/{on=1;next} /<!-- production-install:end -->/{on=0} on && !/^```/' "$root/docs/operations.md")"
[ -n "$commands" ] || { echo "production install: no production-install block in docs/operations.md" >&2; exit 1; }
# The unit's comment must give the same commands, joined by &&.
joined="$(printf '%s\n' "$commands" | paste -sd'&' - | sed 's/&/ \&\& /g')"
grep -qF "$joined" "$root/systemd/ferry.service" || { echo "production install: systemd/ferry.service does not give: $joined" >&2; exit 1; }

git clone -q "$root" "$work/ferry"
cd "$work/ferry"
echo "$commands" | sed 's/^/+ /'
bash -euo pipefail -c "$commands"

[ ! -e node_modules/typescript ] || { echo "production install: dev dependencies are still installed" >&2; exit 1; }
[ -f dist/cli/index.js ] || { echo "production install: dist/cli/index.js was not built" >&2; exit 1; }

# The unit's ExecStart, on the embedded default with ephemeral loopback ports.
log="$work/daemon.log"
env -u DATABASE_URL -u REDIS_URL FERRY_DATA_DIR="$work/data" FERRY_HTTP_PORT=0 FERRY_ADMIN_PORT=0 FERRY_SMPP_PORT=0 NODE_ENV=production \
  node --enable-source-maps --max-semi-space-size=32 dist/cli/index.js start >"$log" 2>&1 &
daemon=$!
# A loaded CI machine can take more than a minute to start it (migrations on the embedded database).
for _ in $(seq 1 180); do
  grep -q '"msg":"ferry started"' "$log" && break
  kill -0 "$daemon" 2>/dev/null || { cat "$log" >&2; echo "production install: the daemon exited" >&2; exit 1; }
  sleep 1
done
grep -q '"msg":"ferry started"' "$log" || { cat "$log" >&2; echo "production install: the daemon did not start in 180 s" >&2; exit 1; }
admin="$(grep '"msg":"ferry started"' "$log" | node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).admin')"
curl -sf "$admin/readyz" >/dev/null || { echo "production install: /readyz did not answer 200" >&2; exit 1; }

# The CLI as docs/operations.md (The ferry command) tells an operator to run it, against that daemon: `npx ferry` in the
# release folder (a fresh npm cache, as on a first call: npx installs the folder into its cache and runs `prepare`,
# which must not need the pruned compiler), then the systemd wrapper installed on a PATH. The daemon listens on an
# ephemeral port, so FERRY_ADMIN_URL gives the address the config would.
cli() { # expected-output-regex command...
  local want="$1" out rc=0
  shift
  out="$(env -u DATABASE_URL -u REDIS_URL FERRY_DATA_DIR="$work/data" FERRY_ADMIN_URL="$admin" npm_config_cache="$work/npm-cache" "$@" 2>&1)" || rc=$?
  echo "+ $* (exit $rc)"
  [ "$rc" = 0 ] && printf '%s\n' "$out" | grep -qE "$want" || { printf '%s\n' "$out" >&2; echo "production install: \`$*\` exited $rc or did not print /$want/" >&2; exit 1; }
}
cli '^\(none\)$' npx ferry accounts list
cli '^\(none\)$' npx ferry accounts list
cli 'name +acme' npx ferry accounts create acme --country GH
cli '"token": "[A-Za-z0-9+/=]+"' npx ferry keys create --account acme --scopes all --json
mkdir -p "$work/bin"
install -m 0755 systemd/ferry "$work/bin/ferry"
cli 'acme' env PATH="$work/bin:$PATH" FERRY_HOME="$work/ferry" FERRY_ENV_FILE=/dev/null FERRY_CONFIG= ferry accounts list
cli 'ak_live_' env PATH="$work/bin:$PATH" FERRY_HOME="$work/ferry" FERRY_ENV_FILE=/dev/null FERRY_CONFIG= ferry keys list --account acme
kill -TERM "$daemon"
wait "$daemon" || { cat "$log" >&2; echo "production install: the daemon did not stop cleanly" >&2; exit 1; }
daemon=""
echo "production install: built, pruned, started, answered the CLI and stopped cleanly"
