#!/bin/sh
# Builds the C tests of libhttpdns.so against its headers and runs them:
#   test_httpdns     the API end to end
#   test_bad_args    every entry point with bad arguments, each case in a child process
#   test_threads     one handle shared by 8 threads
#   test_ipdirect    httpdns_curl.h with libcurl against real origins: IP-literal URLs with
#                    their host name, redirects, shared addresses, dead stale addresses, refused
#                    stores (in the clients' test world: skipped without HTTPDNS_FIXTURE)
# and compiles both public headers under strict ISO C (httpdns_curl.h with libcurl's).
#   HTTPDNS_LIB      the built library (default .build/release/libhttpdns.so)
#   HTTPDNSD_SOCKET  the daemon's socket (default: the library's own rule)
#   HTTPDNS_FIXTURE  clients/testing/fixture.py's fixture.json, the daemon configured for it
#                    (.ci/test's client_suite runs this script so)
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
for test in test_httpdns test_bad_args test_threads test_ipdirect; do
    libs=
    [ "$test" != test_ipdirect ] || libs=$(pkg-config --cflags --libs libcurl)
    # shellcheck disable=SC2086
    gcc $cflags -pthread "Tests/c/$test.c" -L "$work" -lhttpdns -Wl,-rpath,"$work" $libs -o "$work/$test"
    # The consumer must not need the Swift runtime: the library carries it.
    if ldd "$work/$test" | grep -q libswiftCore; then
        echo "$test: FAIL libhttpdns.so needs libswiftCore" >&2
        exit 1
    fi
    "$work/$test" || status=1
done
exit $status
