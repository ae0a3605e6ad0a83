#!/usr/bin/env bash
# The test command: installs what the tests need when it is missing
# (redis-server, redis-cli, Debian's python3-redis, chromium for the status
# page's browser test, the node packages of the compatibility suite), checks each module and its code, then runs every
# test with the race detector. Needs root (or sudo) only when something is missing.
set -euo pipefail
cd "$(dirname "$0")"

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v redis-cli >/dev/null || need+=(redis-tools)
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import redis' 2>/dev/null || need+=(python3-redis)
[ -x /usr/bin/chromium ] || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}"
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ -f compat/node/package-lock.json ]; then
  (cd compat/node && npm ci --no-audit --no-fund --loglevel=error)
fi

go version
# No compiled file is tracked: binaries and bytecode are built, not committed
# (grep -I skips binary files, so a non-empty file it cannot read as text is one).
binaries=$(git ls-files -z | xargs -0 -r grep -LIZ -e '' -- | xargs -0 -r -I{} sh -c 'test -s "{}" && echo "{}"' || true)
if [ -n "$binaries" ]; then
  echo "compiled or binary files are tracked:"; echo "$binaries"; exit 1
fi
staticcheck_version=v0.8.2  # release 2026.2.2
# Each module by itself: the main one, then compat/ and bench/, which have
# their own go.mod so that the client libraries and load generators they
# drive stay out of the main module's dependencies.
for dir in . compat bench; do
  echo "== module ${dir}"
  (
    cd "$dir"
    # go.mod and go.sum must already be what `go mod tidy` makes of them.
    go mod tidy -diff
    go vet ./...
    go run "honnef.co/go/tools/cmd/staticcheck@${staticcheck_version}" ./...
    go test -race -count=1 -timeout 30m ./...
  )
done
# Allocation budgets once more without the race detector, which allocates
# on its own (some of them are checked only here).
go test -count=1 -run 'Alloc' ./quorum/ ./backend/ ./proxy/ ./commands/
# A short fuzzing run of the client-facing input paths (their seeds ran above),
# about ten seconds each here. The budgets are counts of inputs, not durations:
# Go 1.26's fuzzing coordinator can report its own -fuzztime deadline as a
# failure ("context deadline exceeded", no input written; go.dev/issue/75804),
# and a count sets no deadline.
go test -run='^$' -fuzz=FuzzRequestStream -fuzztime=40000x -fuzzminimizetime=5s ./proxy/
go test -run='^$' -fuzz=FuzzExec -fuzztime=20000x -fuzzminimizetime=5s ./commands/
go test -run='^$' -fuzz=FuzzCheck -fuzztime=80000x -fuzzminimizetime=5s ./commands/scriptcheck/
