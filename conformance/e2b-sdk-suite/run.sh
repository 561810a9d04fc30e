#!/usr/bin/env bash
# Runs E2B's own JS SDK tests (tests/api and tests/sandbox of packages/js-sdk
# at E2B commit b8029973, SDK source 2.45.0) under vitest against a hutch
# daemon, as a new user would point them at hutch (issue 43). Not part of
# make test: it needs the E2B repository and npm's registry, and takes
# about 20 minutes. It prints the pass/fail counts and each failing test.
#
# The tests that mock E2B's API with MSW (egressProxy, iam,
# lifecycleRequest, networkTransform) check the SDK's own requests against
# a mock of https://api.e2b.app and never reach a server: they run in a
# second vitest, without E2B_API_URL, which would send their requests past
# the mock.
#
# Environment:
#   E2B_GIT_DIR  a git directory of github.com/e2b-dev/E2B holding the commit
#                (default /work/.mirror/e2b-dev+E2B/repo, the `fetch` mirror)
#   SDK_DIR      where the SDK's tests are unpacked and their dependencies
#                installed; kept between runs (default /var/tmp/hutch-e2b-sdk)
#   HUTCH_BIN    the daemon (default bin/hutch)
#   OUT          the directory of the vitest JSON reports (default a temp dir)
#   ONLY         vitest file filters instead of all (tests/sandbox/files)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$(dirname "$here")")
commit=b8029973a
git_dir=${E2B_GIT_DIR:-/work/.mirror/e2b-dev+E2B/repo}
sdk=${SDK_DIR:-/var/tmp/hutch-e2b-sdk}
hutch=${HUTCH_BIN:-$root/bin/hutch}
out=${OUT:-$(mktemp -d /tmp/hutch-e2b-sdk-out.XXXXXX)}
mkdir -p "$out"
mocked=(tests/sandbox/egressProxy.test.ts tests/sandbox/iam.test.ts tests/sandbox/lifecycleRequest.test.ts tests/sandbox/networkTransform.test.ts)

js=$sdk/packages/js-sdk
if [ ! -f "$js/.hutch-$commit" ]; then
	rm -rf "$sdk" && mkdir -p "$sdk"
	git --git-dir="$git_dir" archive "$commit" packages/js-sdk | tar -x -C "$sdk"
	# The SDK's runtime dependencies and the test tools, without its build
	# and browser tool chain.
	cat >"$js/package.json" <<'JSON'
{"name":"e2b-sdk-tests-local","private":true,"type":"module","dependencies":{"@bufbuild/protobuf":"^2.17.0","@connectrpc/connect":"^2.3.0","@connectrpc/connect-web":"^2.3.0","chalk":"^5.6.2","compare-versions":"^6.1.1","dockerfile-ast":"^0.7.1","dotenv":"^18.0.10","error-stack-parser-es":"^2.0.1","glob":"^13.0.7","msw":"^2.15.0","openapi-fetch":"^0.14.1","platform":"^1.3.6","tar":"^7.5.23","undici":"^7.30.2","vitest":"^4.1.10"}}
JSON
	(cd "$js" && npm install --ignore-scripts --no-audit --no-fund >/dev/null)
	touch "$js/.hutch-$commit"
fi
cp "$here/vitest.hutch.mts" "$js/vitest.hutch.mts"

work=$(mktemp -d /tmp/hutch-e2b-sdk.XXXXXX)
key=e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')
cat >"$work/config.yaml" <<YAML
image_cache_dir: ${HUTCH_TEST_IMAGE_CACHE:-/var/tmp/hutch-image-cache}
image_allowlist: [python, node, e2b-base]
max_concurrent_sandboxes: 32
e2b:
  api_keys:
    e2b-alice: $key
YAML
"$hutch" serve --config "$work/config.yaml" --data-dir "$work/data" \
	--listen "${HUTCH_LISTEN:-127.0.0.1:0}" --engine-listen 127.0.0.1:0 2>"$work/daemon.log" &
pid=$!
finish() {
	kill -TERM "$pid" 2>/dev/null && wait "$pid" || true
	rm -rf "$work"
}
trap finish EXIT
for _ in $(seq 1 1500); do
	grep -q '"msg":"hutch serving"' "$work/daemon.log" && break
	kill -0 "$pid" 2>/dev/null || { cat "$work/daemon.log" >&2; exit 1; }
	sleep 0.2
done
listen=$(grep -m1 -o '"listen":"[^"]*"' "$work/daemon.log" | cut -d'"' -f4)
echo "e2b-sdk-suite: hutch at http://$listen, reports in $out"

cd "$js"
only=(${ONLY:-})
E2B_API_URL=http://$listen E2B_SANDBOX_URL=http://$listen E2B_API_KEY=$key \
	npx vitest run -c vitest.hutch.mts --reporter=json --outputFile="$out/server.json" \
	$(printf -- '--exclude %s ' "${mocked[@]}") "${only[@]}" >"$out/server.log" 2>&1 || true
if [ ${#only[@]} -eq 0 ]; then
	env -u E2B_API_URL -u E2B_SANDBOX_URL -u E2B_API_KEY -u E2B_DOMAIN \
		npx vitest run -c vitest.hutch.mts --reporter=json --outputFile="$out/mocked.json" \
		"${mocked[@]}" >"$out/mocked.log" 2>&1 || true
fi
node "$here/summary.mjs" "$out"/*.json
