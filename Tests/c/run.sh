#!/bin/sh
# Builds the C tests of libhttpdns.so against its headers and runs them:
#   test_httpdns     the API end to end
#   test_bad_args    every entry point with bad arguments, each case in a child process
#   test_threads     one handle shared by 8 threads
# and compiles both public headers under strict ISO C (httpdns_curl.h with libcurl's).
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
cflags="-std=c11 -Wall -Wextra -Werror -I Sources/HTTPDNSClientC/include"

printf '#include <httpdns.h>\n#include <httpdns_curl.h>\nint main(void) { return 0; }\n' > "$work/headers.c"
# shellcheck disable=SC2046,SC2086
gcc $cflags -pedantic $(pkg-config --cflags libcurl) -c "$work/headers.c" -o "$work/headers.o"

status=0
for test in test_httpdns test_bad_args test_threads; do
    # shellcheck disable=SC2086
    gcc $cflags -pthread "Tests/c/$test.c" -L "$work" -lhttpdns -Wl,-rpath,"$work" -o "$work/$test"
    # The consumer must not need the Swift runtime: the library carries it.
    if ldd "$work/$test" | grep -q libswiftCore; then
        echo "$test: FAIL libhttpdns.so needs libswiftCore" >&2
        exit 1
    fi
    "$work/$test" || status=1
done
exit $status
