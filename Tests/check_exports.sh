#!/bin/sh
# Checks that the functions declared in httpdns.h and the httpdns_* symbols that libhttpdns.so
# exports are the same set. HTTPDNS_LIB: the library (default .build/release/libhttpdns.so).
set -eu
cd "$(dirname "$0")/.."
lib="${HTTPDNS_LIB:-.build/release/libhttpdns.so}"
header=Sources/HTTPDNSClientC/include/httpdns.h
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Declarations: an identifier httpdns_... followed by '(' (macros are HTTPDNS_E_..., upper case).
grep -oE '\bhttpdns_[a-z_]+[[:space:]]*\(' "$header" | tr -d ' (' | sort -u > "$work/declared"
nm -D --defined-only "$lib" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' | grep '^httpdns_' | sort -u > "$work/exported"
if diff -u "$work/declared" "$work/exported"; then
    echo "check_exports: $(wc -l < "$work/declared") functions, 1 passed, 0 failed"
else
    echo "check_exports: header (-) and exported symbols (+) differ; 0 passed, 1 failed" >&2
    exit 1
fi
