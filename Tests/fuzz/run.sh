#!/bin/sh
# Builds the libFuzzer harness for the JSON parser, JSON-RPC decoder, request scanner and line framer, then fuzzes for
# a bounded time. Usage: fuzz/run.sh [SECONDS] (default 60). Extra arguments go to libFuzzer.
# New corpus entries and crash inputs stay under fuzz/.build; fuzz/corpus is only read.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=${1:-60}
[ $# -gt 0 ] && shift
build="$here/.build"
mkdir -p "$build/corpus" "$build/artifacts"

defines=""
[ "${FUZZ_FRAMER_SPLIT:-0}" = 1 ] && defines="-D FRAMER_SPLIT_INVARIANCE"

# shellcheck disable=SC2086
swiftc -swift-version 6 $defines -parse-as-library -O -g \
    -enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility \
    -sanitize=fuzzer,address -use-ld=lld \
    -module-name HTTPDNSProtocolFuzz \
    "$root"/Sources/HTTPDNSProtocol/*.swift "$root/Tests/HTTPDNSProtocolTests/RequestAgreement.swift" \
    "$here/FuzzEntry.swift" \
    -o "$build/protocol-fuzzer"

# The Swift runtime's own crash handler would fight ASan's; let libFuzzer report the trap.
export SWIFT_BACKTRACE=enable=no
# Working corpus first (libFuzzer writes there), seeds second (read only).
exec "$build/protocol-fuzzer" \
    -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
    -dict="$here/json.dict" -artifact_prefix="$build/artifacts/" -print_final_stats=1 \
    "$@" "$build/corpus" "$here/corpus"
