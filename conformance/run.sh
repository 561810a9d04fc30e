#!/usr/bin/env bash
# Runs the conformance suite: starts bin/hutch serve on a private data dir and
# free loopback ports, configured with seed 000's engine block, runs every
# test under conformance/test with node --test and the real iii-sdk, then
# stops the daemon with SIGTERM and checks that nothing of it is left.
# Exits non-zero when anything fails. Arguments, when given, are the test
# files to run (test/engine.test.mjs) instead of all of them.
#
# Environment: HUTCH_BIN (default bin/hutch), HUTCH_TEST_IMAGE_CACHE (default
# /var/tmp/hutch-image-cache, shared with the Go tests so presets are built
# once per machine), HUTCH_KEEP_WORK=1 keeps the work dir (daemon log).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
hutch=${HUTCH_BIN:-$root/bin/hutch}
cache=${HUTCH_TEST_IMAGE_CACHE:-/var/tmp/hutch-image-cache}

if [ ! -x "$hutch" ]; then
	echo "conformance: $hutch not found; run make build" >&2
	exit 1
fi
if [ ! -d "$here/node_modules/iii-sdk" ] || [ ! -d "$here/node_modules/@e2b/code-interpreter" ] || [ ! -d "$here/node_modules/puppeteer-core" ]; then
	(cd "$here" && npm ci --ignore-scripts --no-audit --no-fund)
fi

work=$(mktemp -d /tmp/hutch-conformance.XXXXXX)
log=$work/daemon.log
# Seed 000, "Engine setup": the block `iii worker add iii-sandbox` writes,
# verbatim, plus where the shared image cache is and two owners' E2B keys
# (the E2B SDK tests; the REST API stays tokenless, the local user's).
e2b_key=e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')
e2b_other_key=e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')
cat >"$work/config.yaml" <<EOF
workers:
  - name: iii-sandbox
    config:
      auto_install: true
      image_allowlist:
        - python
        - node
        - e2b-base # issue 43: E2B's base template
      default_idle_timeout_secs: 300
      max_concurrent_sandboxes: 32
      default_cpus: 1
      default_memory_mb: 512
      image_cache_dir: $cache
      e2b:
        api_keys:
          e2b-alice: $e2b_key
          e2b-bob: $e2b_other_key
EOF

"$hutch" serve --config "$work/config.yaml" --data-dir "$work/data" \
	--listen 127.0.0.1:0 --engine-listen 127.0.0.1:0 2>"$log" &
pid=$!

status=1
finish() {
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid"
		if ! wait "$pid"; then
			echo "conformance: hutch serve did not exit cleanly on SIGTERM" >&2
			status=1
		fi
	fi
	# Nothing of the daemon's sandboxes may outlive it.
	if left=$(pgrep -af -- "$work/data"); then
		echo "conformance: processes left behind:" >&2
		echo "$left" >&2
		status=1
	fi
	if [ "$status" -ne 0 ]; then
		echo "conformance: FAILED; daemon log ($log):" >&2
		tail -n 200 "$log" >&2
	fi
	if [ "$status" -eq 0 ] && [ "${HUTCH_KEEP_WORK:-}" != 1 ]; then
		rm -rf "$work"
	fi
	exit "$status"
}
trap finish EXIT
trap 'exit 130' INT TERM

line=
for _ in $(seq 1 3000); do
	line=$(grep -m1 '"msg":"hutch serving"' "$log" || true)
	[ -n "$line" ] && break
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "conformance: hutch serve exited at start" >&2
		exit 1
	fi
	sleep 0.1
done
if [ -z "$line" ]; then
	echo "conformance: hutch serve did not start within 300s" >&2
	exit 1
fi
read -r http engine < <(node -e 'const l = JSON.parse(process.argv[1]); console.log(l.listen, l.engine_listen)' "$line")

export HUTCH_URL="http://$http" III_URL="ws://$engine" HUTCH_BIN="$hutch"
export E2B_API_URL="http://$http" E2B_SANDBOX_URL="http://$http" E2B_API_KEY="$e2b_key" E2B_OTHER_API_KEY="$e2b_other_key"
export PATH="$(dirname "$hutch"):$PATH"
echo "conformance: hutch serve at $HUTCH_URL, engine at $III_URL (log: $log)"
cd "$here"
# One file at a time: the files share the daemon, and each stops what its
# tests left running.
failed=()
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(test/*.test.mjs)
for f in "${files[@]}"; do
	node --test --test-reporter=spec "$f" || failed+=("$f")
done
if [ ${#failed[@]} -eq 0 ]; then
	echo "conformance: every test passed"
	status=0
else
	echo "conformance: failed: ${failed[*]}" >&2
fi
