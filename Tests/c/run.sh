#!/bin/sh
# Builds Tests/c/test_httpdns.c against the header and libhttpdns.so, then runs it.
#   HTTPDNS_LIB      the built library (default .build/release/libhttpdns.so)
#   HTTPDNSD_SOCKET  the daemon's socket (default: the library's own rule)
set -eu
cd "$(dirname "$0")/../.."
lib=$(realpath "${HTTPDNS_LIB:-.build/release/libhttpdns.so}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The SONAME is libhttpdns.so.0: the loader looks for that name, so give it one beside the link name.
ln -s "$lib" "$work/libhttpdns.so"
ln -s "$lib" "$work/libhttpdns.so.0"
gcc -std=c11 -Wall -Wextra -Werror -I Sources/HTTPDNSClientC/include Tests/c/test_httpdns.c \
    -L "$work" -lhttpdns -Wl,-rpath,"$work" -o "$work/test_httpdns"
# The consumer must not need the Swift runtime: the library carries it.
if ldd "$work/test_httpdns" | grep -q libswiftCore; then
    echo "test_httpdns: FAIL libhttpdns.so needs libswiftCore" >&2
    exit 1
fi
"$work/test_httpdns"
