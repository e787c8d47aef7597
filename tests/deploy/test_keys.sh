#!/bin/sh
# Keys on one machine (127.0.0.1; the multi-host test repeats this across namespaces):
#   - paddock-pn and paddock-rm refuse to listen on a non-loopback address without keys, and
#     say how to override it;
#   - a client whose key is not on the allow-list gets no answer from any RM API or PN of a
#     CURVE cluster (`paddock cluster up`), and its task never runs; the same request with an
#     allowed key is answered by each.
# Stops exactly the daemons it started (`paddock cluster down` on its own directory).
set -u
. "$(dirname "$0")/lib.sh"
bin=${PADDOCK_BIN_DIR:?PADDOCK_BIN_DIR is not set}
probe="$bin/deploy_probe"
T=$(mktemp -d "${TMPDIR:-/tmp}/paddock-keys.XXXXXX") || exit 1
ok=0
cleanup() {
    "$bin/paddock" cluster down --dir "$T/c" >/dev/null 2>&1
    [ $ok = 1 ] || for f in "$T"/c/*.log; do [ -f "$f" ] && { echo "---- $f"; tail -n 10 "$f"; }; done
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# ---- no keys, no network ----------------------------------------------------------------------
out=$(timeout 10 "$bin/paddock-pn" --set "pn.listen=tcp://0.0.0.0:0" --set "pn.work_dir=$T/pn" \
    --set node.name=nokeys --set node.cpus=1 --set node.memory=64MiB 2>&1)
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "paddock-pn on 0.0.0.0 without keys started (exit $rc)"
case $out in *--insecure*) ;; *) fail "paddock-pn refusal does not name --insecure: $out" ;; esac
echo "ok: $out"
out=$(timeout 10 "$bin/paddock-rm" --bootstrap --set rm.id=1 --set "rm.data_dir=$T/rm" \
    --set cluster.ids=1 --set cluster.raft=127.0.0.1:1 --set "cluster.api=tcp://0.0.0.0:0" \
    --set "cluster.pub=tcp://127.0.0.1:0" 2>&1)
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "paddock-rm on 0.0.0.0 without keys started (exit $rc)"
case $out in *--insecure*) ;; *) fail "paddock-rm refusal does not name --insecure: $out" ;; esac
echo "ok: $(printf '%s\n' "$out" | grep insecure)"

# ---- an intruder against every server of a CURVE cluster --------------------------------------
"$bin/paddock" cluster up --dir "$T/c" --rm 3 --pn 2 --pn-cpus 1 --pn-mem-mb 256 >/dev/null 2>&1 ||
    fail "paddock cluster up"
"$bin/paddock" keygen --dir "$T/intruder" --name intruder >/dev/null || fail "keygen"
servers=""
for f in "$T"/c/rm-*.conf; do
    id=$(sed -n 's/^id = //p' "$f")
    api=$(sed -n 's/^api = //p' "$f" | tr -d ' ' | cut -d, -f"$id")
    servers="$servers rm:$api"
done
for f in "$T"/c/pn-*.conf; do
    servers="$servers pn:$(sed -n 's/^listen = //p' "$f")"
done
n=0
for s in $servers; do
    kind=${s%%:*}
    ep=${s#*:}
    n=$((n + 1))
    o=$("$probe" --$kind "$ep" --keys "$T/intruder" --name intruder \
        --server-pub "$T/c/keys/paddock.pub" --marker "$T/intruder-ran-$n" --timeout-ms 1500)
    [ $? = 1 ] || fail "intruder: $kind at $ep answered ($o)"
    o=$("$probe" --$kind "$ep" --keys "$T/c/keys" --name paddock \
        --server-pub "$T/c/keys/paddock.pub" --marker "$T/allowed-ran-$n" --timeout-ms 5000) ||
        fail "allowed client: no answer from $kind at $ep ($o)"
    echo "ok: $kind at $ep: intruder refused, allowed client answered ($o)"
done
[ $n = 5 ] || fail "expected 3 RM replicas and 2 PNs, found $n servers"
for i in 4 5; do # the PNs: the allowed task ran; the intruder's never did
    wait_for 10 "the allowed client's task to run on server $i" test -e "$T/allowed-ran-$i"
    [ ! -e "$T/intruder-ran-$i" ] || fail "the intruder's task ran on server $i"
done
ok=1
