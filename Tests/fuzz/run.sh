#!/bin/bash
# Builds the libFuzzer harness (HTTPDNSProtocol, HTTPDNSURL, HTTPDNSCollections and HTTPDNSCore as testable modules, the targets in
# Tests/fuzz, -sanitize=fuzzer,address) and the C target hosts-map (the NSS module's map reader,
# Tests/fuzz/hosts_map_fuzz.c, with the toolchain's clang), then fuzzes each target for a bounded time from
# its seeds in Tests/fuzz/corpus/<target>, JOBS targets at a time, and prints a line of statistics per
# target. Exits 1 when any target crashed, timed out, ran out of memory or broke an invariant; the input
# that did it is kept under Tests/fuzz/.build/artifacts/<target>/ (add it to the target's corpus once the
# parser is fixed).
#
# Usage: Tests/fuzz/run.sh [-t SECONDS | -r RUNS] [-j JOBS] [TARGET...] [-- LIBFUZZER-FLAGS...]
#   -t SECONDS  per target (default 60)     -j JOBS  targets run at once (default: the CPUs)
#   -r RUNS     per target, from a fixed seed with deterministic hashing: the same inputs on
#               every machine, however fast (CI's mode: it passes or fails the same everywhere)
#   -l          list the targets and exit   -b       only build        TARGET  only these (default: all)
# New corpus entries stay under Tests/fuzz/.build/corpus/<target>; the checked-in seeds are only read.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build="$here/.build"
fuzzer="$build/httpdns-fuzzer"
seconds=60
runs=
jobs=$(nproc)
list=0
build_only=0
while getopts "t:r:j:lb" option; do
    case $option in
    t) seconds=$OPTARG ;;
    r) runs=$OPTARG ;;
    j) jobs=$OPTARG ;;
    l) list=1 ;;
    b) build_only=1 ;;
    *) sed -n '2,14p' "$0" >&2; exit 64 ;;
    esac
done
shift $((OPTIND - 1))
targets=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    targets+=("$1")
    shift
done
[ "${1:-}" = "--" ] && shift
libfuzzer_flags=("$@")

# Rebuilt only when a source is newer than the binary (CI always starts without one).
protocol=("$root"/Sources/HTTPDNSProtocol/*.swift)
url=("$root"/Sources/HTTPDNSURL/*.swift)
collections=("$root"/Sources/HTTPDNSCollections/*.swift)
mapfile -t core < <(find "$root/Sources/HTTPDNSCore" -name '*.swift' | sort)
# The scanner's agreement check is shared with the protocol's seeded fuzz test; the jar's targets use
# the tests' ASCII domain rules in place of libpsl; the streamed answers and the RESP reader are
# compiled in from the server's and the Redis owner's sources (they need nothing else); so are the rtnetlink
# parser and the test support's message builder.
harness=("$here"/*.swift "$root/Tests/HTTPDNSProtocolTests/RequestAgreement.swift"
    "$root/Sources/HTTPDNSTestSupport/BasicDomainRules.swift"
    "$root/Sources/HTTPDNSServer/AnswerSource.swift" "$root/Sources/HTTPDNSServer/CookieStreams.swift"
    "$root/Sources/HTTPDNSRedis/RESPReader.swift" "$root/Sources/HTTPDNSRedis/RedisReply.swift"
    "$root/Sources/HTTPDNSServer/RouteNetlinkParser.swift" "$root/Sources/HTTPDNSTestSupport/RouteNetlinkMessages.swift")
if [ ! -x "$fuzzer" ] || [ -n "$(find "${protocol[@]}" "${url[@]}" "${collections[@]}" "${core[@]}" "${harness[@]}" "$0" -newer "$fuzzer" | head -1)" ]; then
    mkdir -p "$build/module"
    started=$(date +%s)
    flags=(-swift-version 6 -parse-as-library -O -gline-tables-only -sanitize=fuzzer,address
        -enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility -I "$build/module")
    # The modules are built for testing, so the targets reach their internals (@testable import).
    module() {
        local name=$1
        shift
        swiftc "${flags[@]}" -module-name "$name" -enable-testing -wmo -c "$@" -emit-module \
            -emit-module-path "$build/module/$name.swiftmodule" -o "$build/module/$name.o"
    }
    # swiftc leaves per-file module pieces in its working directory: keep them under .build.
    cd "$build"
    module HTTPDNSProtocol "${protocol[@]}"
    module HTTPDNSURL "${url[@]}"
    module HTTPDNSCollections "${collections[@]}"
    module HTTPDNSCore "${core[@]}"
    swiftc "${flags[@]}" -use-ld=lld -module-name HTTPDNSFuzz "${harness[@]}" \
        "$build/module/HTTPDNSProtocol.o" "$build/module/HTTPDNSURL.o" \
        "$build/module/HTTPDNSCollections.o" "$build/module/HTTPDNSCore.o" -o "$fuzzer.tmp"
    mv "$fuzzer.tmp" "$fuzzer"
    echo "built $fuzzer in $(($(date +%s) - started)) s"
    cd "$root"
fi

# The C target: its own binary (libFuzzer's main, no Swift).
map_fuzzer="$build/hosts-map-fuzzer"
map_sources=("$here/hosts_map_fuzz.c" "$root/Sources/CHTTPDNSHostsMap/hosts_map_reader.c"
    "$root/Sources/CHTTPDNSHostsMap/siphash.c" "$root/Sources/CHTTPDNSHostsMap/include/hosts_map.h")
if [ ! -x "$map_fuzzer" ] || [ -n "$(find "${map_sources[@]}" "$0" -newer "$map_fuzzer" | head -1)" ]; then
    mkdir -p "$build"
    clang -std=c11 -O1 -g -D_GNU_SOURCE -fuse-ld=lld -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        -I "$root/Sources/CHTTPDNSHostsMap/include" "${map_sources[@]:0:3}" -o "$map_fuzzer.tmp"
    mv "$map_fuzzer.tmp" "$map_fuzzer"
fi
c_targets=$'hosts-map\tthe NSS module\'s hosts map reader (C)'

[ "$build_only" = 1 ] && exit 0
if [ "$list" = 1 ]; then
    HTTPDNS_FUZZ_TARGET=list "$fuzzer"
    echo "$c_targets"
    exit 0
fi
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(HTTPDNS_FUZZ_TARGET=list "$fuzzer" | cut -f1; echo "$c_targets" | cut -f1)
fi

# One libFuzzer process per target; its log, exit status and crash inputs under .build.
run_target() {
    local target=$1 seeds="$here/corpus/$1"
    local work="$build/corpus/$target" artifacts="$build/artifacts/$target"
    rm -rf "$artifacts"
    mkdir -p "$work" "$artifacts" "$build/logs"
    local dictionary=()
    [ -f "$here/dict/$target.dict" ] && dictionary=(-dict="$here/dict/$target.dict")
    [ -d "$seeds" ] || seeds=
    # The Swift runtime's own crash handler would fight ASan's; let libFuzzer report the trap.
    local status=0 bound=(-max_total_time="$seconds")
    # A fixed seed alone does not fix the inputs: Swift seeds its hashing per process, and the
    # order of a Set or Dictionary decides which paths (and so which new inputs) coverage sees.
    # The inputs found by earlier runs would change where this one starts: it starts from the seeds.
    if [ -n "$runs" ]; then
        bound=(-runs="$runs" -seed=1)
        export SWIFT_DETERMINISTIC_HASHING=1
        work="$build/corpus-fixed/$target"
        rm -rf "$work"
        mkdir -p "$work"
    fi
    local binary=$fuzzer
    [ "$target" = hosts-map ] && binary=$map_fuzzer
    HTTPDNS_FUZZ_TARGET=$target SWIFT_BACKTRACE=enable=no "$binary" \
        "${bound[@]}" -max_len=4096 -timeout=10 -rss_limit_mb=1024 \
        -artifact_prefix="$artifacts/" -print_final_stats=1 "${dictionary[@]}" "${libfuzzer_flags[@]}" \
        "$work" ${seeds:+"$seeds"} >"$build/logs/$target.log" 2>&1 || status=$?
    echo "$status" >"$build/logs/$target.status"
}

for target in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    run_target "$target" &
done
wait

stat() { sed -n "s/^stat::$1: *//p" "$2" | tail -1; }
failed=()
printf '%-14s %6s %9s %7s %6s %6s %6s %7s  %s\n' target seeds runs exec/s cov ft corpus rss_mb result
for target in "${targets[@]}"; do
    log="$build/logs/$target.log"
    status=$(cat "$build/logs/$target.status")
    seeds=0
    [ -d "$here/corpus/$target" ] && seeds=$(find "$here/corpus/$target" -type f | wc -l)
    # The last status line: "#N DONE cov: C ft: F corp: U/Sb ...".
    progress=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 || true)
    coverage=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$progress")
    features=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$progress")
    units=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<<"$progress")
    result=ok
    if [ "$status" != 0 ]; then
        result="FAILED (exit $status)"
        failed+=("$target")
    fi
    printf '%-14s %6s %9s %7s %6s %6s %6s %7s  %s\n' "$target" "$seeds" "$(stat number_of_executed_units "$log")" \
        "$(stat average_exec_per_sec "$log")" "${coverage:--}" "${features:--}" "${units:--}" \
        "$(stat peak_rss_mb "$log")" "$result"
done

for target in "${failed[@]}"; do
    printf '\n== %s: the end of its log (%s)\n' "$target" "$build/logs/$target.log"
    grep -v -E '^#[0-9]+ ' "$build/logs/$target.log" | tail -40
    for input in "$build/artifacts/$target"/*; do
        [ -f "$input" ] || continue
        printf 'input %s (%d bytes): ' "$input" "$(wc -c <"$input")"
        head -c 512 "$input" | od -An -c | tr -s ' ' | tr -d '\n'
        echo
    done
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzzing failed: ${failed[*]}" >&2
    exit 1
fi
