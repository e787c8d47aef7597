#!/bin/sh
# The cluster page from another host: two network namespaces joined by a veth pair, "srv"
# (10.251.N.1) running a real one-replica RM with CURVE keys and its HTTP listener on
# 10.251.N.1, and "cli" (10.251.N.2), a machine of the network. The test checks:
#   - without credentials, with a wrong Bearer token, with a wrong ?token= and with another
#     scheme, "/" and "/cluster.json" answer 401 with a WWW-Authenticate header, and none of
#     the data;
#   - every refusal is counted: the page's document and the replica's /metrics say how many;
#   - with the token of KEYS_DIR/web.token (made by `paddock keygen`) as a Bearer header the
#     document is served (the leader's), and "/?token=" serves the page;
#   - headless Chromium in "cli" opening /?token=TOKEN draws the live page (its script sends
#     the token as a header), and opening / without it draws nothing;
#   - a token rotated in the file is used at once: the old one is refused, the new one served.
# Traffic stays inside the namespaces. The test removes its namespaces and kills exactly the
# pid it started, also on failure. Skipped (exit 77) where namespaces cannot be made.
set -u
bin=${PADDOCK_BIN_DIR:?PADDOCK_BIN_DIR is not set}

skip() {
    echo "SKIP: $*"
    exit 77
}
fail() {
    echo "FAIL: $*"
    exit 1
}
say() { echo "[page-netns $(date +%T)] $*"; }

[ "$(id -u)" = 0 ] || skip "creating network namespaces needs root"
command -v ip >/dev/null 2>&1 || skip "no ip command (iproute2)"
command -v curl >/dev/null 2>&1 || skip "no curl"
for b in paddock paddock-rm; do
    [ -x "$bin/$b" ] || skip "$bin/$b is not built"
done

tag="pdp$$"
net="10.251.$(($$ % 200 + 20))"
T=$(mktemp -d "${TMPDIR:-/tmp}/paddock-page-netns.XXXXXX") || exit 1
rmpid=""
made_ns=""
ok=0

cleanup() {
    if [ -n "$rmpid" ]; then
        kill -TERM "$rmpid" 2>/dev/null
        i=0
        while kill -0 "$rmpid" 2>/dev/null && [ $i -lt 50 ]; do
            sleep 0.1
            i=$((i + 1))
        done
        kill -KILL "$rmpid" 2>/dev/null
    fi
    for ns in $made_ns; do
        ip netns del "$ns" 2>/dev/null
    done
    if [ $ok != 1 ] && [ -f "$T/rm.log" ]; then
        echo "---- last lines of rm.log"
        tail -n 20 "$T/rm.log"
    fi
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

srv="$tag-srv"
cli="$tag-cli"
ip netns add "$srv" 2>/dev/null || skip "cannot create a network namespace (ip netns add failed)"
made_ns="$srv"
ip netns add "$cli" || fail "ip netns add $cli"
made_ns="$srv $cli"
ip -n "$srv" link add eth0 type veth peer name eth0 netns "$cli" ||
    skip "cannot create a veth pair across namespaces"
for ns in "$srv" "$cli"; do
    ip -n "$ns" link set lo up
done
ip -n "$srv" addr add "$net.1/24" dev eth0
ip -n "$cli" addr add "$net.2/24" dev eth0
ip -n "$srv" link set eth0 up
ip -n "$cli" link set eth0 up
say "namespaces $srv ($net.1) and $cli ($net.2)"

# ---- a one-replica RM with keys: its sockets on the namespace's loopback, HTTP on $net.1 -----
"$bin/paddock" keygen --dir "$T/keys" >/dev/null || fail "paddock keygen"
[ -s "$T/keys/web.token" ] || fail "paddock keygen made no web.token"
[ "$(stat -c %a "$T/keys/web.token")" = 600 ] || fail "web.token is not mode 0600"
token=$(head -n 1 "$T/keys/web.token")
cat >"$T/rm.conf" <<EOF
[rm]
id = 1
data_dir = $T/rm

[cluster]
ids = 1
raft = 127.0.0.1:7301
api = tcp://127.0.0.1:7201
heartbeat = tcp://127.0.0.1:7202
pub = tcp://127.0.0.1:7501

[security]
keys_dir = $T/keys

[metrics]
listen = $net.1:7900
EOF
# ip netns exec execs the daemon: $! is its pid
ip netns exec "$srv" "$bin/paddock-rm" --config "$T/rm.conf" --bootstrap >"$T/rm.log" 2>&1 &
rmpid=$!
url="http://$net.1:7900"

# get NS [CURL ARGS...] URL: prints the status code; the body goes to $T/body, headers $T/head
get() {
    ns=$1
    shift
    ip netns exec "$ns" curl -s -m 5 -o "$T/body" -D "$T/head" -w '%{http_code}' "$@"
}

i=0
until [ "$(get "$cli" -H "Authorization: Bearer $token" "$url/cluster.json")" = 200 ]; do
    kill -0 "$rmpid" 2>/dev/null || fail "paddock-rm exited"
    i=$((i + 1))
    [ $i -lt 100 ] || fail "the RM on $net.1 did not serve its document as leader within 20 s"
    sleep 0.2
done
grep -q '"role":"leader"' "$T/body" || fail "the document is not the leader's: $(head -c 300 "$T/body")"
say "leader serving on $url"

# ---- refused without the token ----------------------------------------------------------------
refused=0
refuse() { # refuse WHAT CURL ARGS...: expects 401, a WWW-Authenticate header and no data
    what=$1
    shift
    code=$(get "$cli" "$@")
    [ "$code" = 401 ] || fail "$what: answered $code, not 401"
    grep -qi '^WWW-Authenticate: Bearer' "$T/head" || fail "$what: no WWW-Authenticate header"
    grep -q '"nodes"\|Paddock cluster' "$T/body" && fail "$what: data in a refusal"
    refused=$((refused + 1))
}
refuse "/cluster.json without credentials" "$url/cluster.json"
refuse "/ without credentials" "$url/"
refuse "a wrong Bearer token" -H "Authorization: Bearer not-the-token-0123456789" "$url/cluster.json"
refuse "a wrong ?token=" "$url/?token=not-the-token-0123456789"
refuse "Basic instead of Bearer" -H "Authorization: Basic $token" "$url/cluster.json"
refuse "a truncated token" -H "Authorization: Bearer $(echo "$token" | cut -c 1-40)" "$url/"
grep -qi 'invalid_token' "$T/head" || fail "a wrong token is not named invalid_token"
say "$refused requests refused with 401"

# ---- accepted with it ----------------------------------------------------------------------------
[ "$(get "$cli" -H "Authorization: Bearer $token" "$url/cluster.json")" = 200 ] ||
    fail "the token was refused"
grep -q "\"unauthorized\":$refused[,}]" "$T/body" ||
    fail "the document does not count $refused refusals: $(grep -o '"page":{[^}]*}' "$T/body")"
[ "$(get "$cli" "$url/?token=$token")" = 200 ] || fail "/?token= was refused"
grep -q 'Paddock cluster' "$T/body" || fail "/?token= did not serve the page"
grep -qi '^Content-Security-Policy:' "$T/head" || fail "the page has no Content-Security-Policy"
grep -qi '^Referrer-Policy: no-referrer' "$T/head" || fail "the page may leak ?token= as referrer"
code=$(get "$cli" "$url/metrics")
if [ "$code" = 200 ]; then
    grep -q "^paddock_rm_page_requests_total{result=\"unauthorized\"} $refused\$" "$T/body" ||
        fail "/metrics does not count $refused refusals: $(grep page_requests "$T/body")"
    say "/metrics counts the $refused refusals"
else
    code=$(get "$cli" -H "Authorization: Bearer $token" "$url/metrics")
    [ "$code" = 200 ] || fail "/metrics answered $code"
    grep -q "^paddock_rm_page_requests_total{result=\"unauthorized\"} $((refused + 1))\$" \
        "$T/body" || fail "/metrics does not count the refusals: $(grep page_requests "$T/body")"
fi
say "the token is accepted from $net.2; refusals counted"

# ---- a browser on the other host ----------------------------------------------------------------
browser=/usr/bin/chromium
if [ -x "$browser" ]; then
    dom() { # dom URL: the page's DOM after 3 s of (virtual) time
        ip netns exec "$cli" timeout 60 "$browser" --headless --no-sandbox --disable-gpu \
            --disable-quic --no-first-run --disable-background-networking \
            --disable-component-update --disable-sync --user-data-dir="$T/profile-$1" \
            --virtual-time-budget=3000 --dump-dom "$2" 2>/dev/null
    }
    dom a "$url/?token=$token" >"$T/dom-ok.html" || fail "chromium failed"
    grep -q 'data-updates="[1-9][0-9]*" data-nodes="0" data-jobs="0" data-cells="0" data-role="leader"' \
        "$T/dom-ok.html" ||
        fail "chromium with ?token= drew no live page: $(grep -o '<main[^>]*>' "$T/dom-ok.html")"
    grep -q "$token" "$T/dom-ok.html" && fail "the token is left in the page"
    dom b "$url/" >"$T/dom-no.html"
    grep -q 'data-updates="[1-9]' "$T/dom-no.html" && fail "chromium without the token drew the page"
    say "chromium on $net.2: live page with ?token=, nothing without"
else
    say "no $browser: the browser checks are skipped"
fi

# ---- rotation: a new token in the file is used at once ------------------------------------------
"$bin/paddock" keygen --dir "$T/keys2" >/dev/null || fail "paddock keygen"
cp "$T/keys2/web.token" "$T/keys/web.token.new" && mv "$T/keys/web.token.new" "$T/keys/web.token"
token2=$(head -n 1 "$T/keys/web.token")
[ "$token2" != "$token" ] || fail "keygen made the same token twice"
refuse "the rotated-out token" -H "Authorization: Bearer $token" "$url/cluster.json"
[ "$(get "$cli" -H "Authorization: Bearer $token2" "$url/cluster.json")" = 200 ] ||
    fail "the new token was refused"
say "a rotated token is used without a restart"

kill -0 "$rmpid" 2>/dev/null || fail "paddock-rm died"
# a clean stop (under ASan also: no leak, no error report from the page's requests)
kill -TERM "$rmpid"
wait "$rmpid"
rc=$?
rmpid=""
[ $rc = 0 ] || fail "paddock-rm exited $rc after SIGTERM"
grep -q 'Sanitizer' "$T/rm.log" && fail "sanitizer report in rm.log: $(grep -m 3 Sanitizer "$T/rm.log")"
ok=1
echo "PASS"
