#!/bin/sh
# Benchmarks/nss/bench.sh [REPS] [CALLS]
#
# getaddrinfo(3) latency for one name with one IPv4 and one IPv6 address, single-threaded,
# through three nsswitch.conf hosts lines:
#   files    nss_files reading a small /etc/hosts
#   httpdns  libnss_httpdns.so.2 with the release daemon (Upstream=system, MinTTL=1h, warmed up
#            before measuring): after the process's first lookup, answers from the hosts map
#   dns      glibc's nss_dns asking a plain DNS server on 127.0.0.77:53 (dns_responder.py, Python
#            stdlib; A and AAAA go out in parallel, as glibc sends them)
#   nscd     glibc's nscd caching hosts with "shared hosts yes" over the same /etc/hosts as
#            files: after the process's first lookup, answers from nscd's mapped cache (the
#            anchor); only when an nscd binary is found ($NSCD, else nscd on PATH). Installing
#            Debian's package starts a machine-wide nscd; to run the bench without one:
#            apt-get download nscd && dpkg-deb -x nscd_*.deb /opt/nscd && NSCD=/opt/nscd/usr/sbin/nscd
# and the module's _nss_httpdns_gethostbyname4_r called directly (module_bench.c):
#   module         the name as is: from the hosts map
#   module-socket  the name in capitals: never in the map, every call a request to the daemon
# Each run is a private mount namespace (unshare -m) with its own nsswitch.conf, hosts and
# resolv.conf, and a fresh /run, so no nscd answers but the nscd run's own. Runs are interleaved REPS times (default 3),
# CALLS lookups each (default 20000); prints one line per run and a table of the medians over the
# runs of each percentile (per_second counts wall time, scheduling gaps included). Root only;
# nothing leaves 127.0.0.0/8. Not a test: numbers for the README, nothing is asserted.
set -eu

reps=${1:-3}
calls=${2:-20000}
[ "$(id -u)" = 0 ] || { echo "bench.sh: run as root (it mounts in a private namespace)" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
work=$(mktemp -d /tmp/nss-bench.XXXXXX)
daemon_pid=
dns_pid=
cleanup() {
    [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
    [ -n "$dns_pid" ] && kill "$dns_pid" 2>/dev/null && wait "$dns_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "building the release daemon, the module and gai_bench" >&2
swift build --package-path "$top" -c release --product httpdnsd >&2
daemon=$(swift build --package-path "$top" -c release --show-bin-path)/httpdnsd
"$top/packaging/build-nss" "$work/lib" >/dev/null
cc -std=c11 -O2 -Wall -Wextra -Werror -o "$work/gai_bench" "$here/gai_bench.c" -lpthread
cc -std=c11 -O2 -Wall -Wextra -Werror -o "$work/module_bench" "$here/module_bench.c" -ldl

name=bench.nss.test
address=127.0.0.50
address6=fd00::50
mkdir -p "$work/run" "$work/state"
printf '127.0.0.1 localhost\n::1 localhost\n' > "$work/hosts-plain"
printf '127.0.0.1 localhost\n::1 localhost\n%s %s\n%s %s\n' "$address" "$name" "$address6" "$name" \
    > "$work/hosts-with-name"
printf 'nameserver 127.0.0.77\noptions timeout:1 attempts:1\n' > "$work/resolv.conf"
for source in files httpdns dns; do printf 'hosts: %s\n' "$source" > "$work/nsswitch-$source"; done
nscd=${NSCD:-$(command -v nscd || true)}
sources="files httpdns dns${nscd:+ nscd} module module-socket"
[ -n "$nscd" ] || echo "no nscd binary (set NSCD=PATH): the nscd anchor is left out" >&2
# Hosts only, kept an hour, read from the mapped cache, never written to disk.
printf '%s\n' 'enable-cache hosts yes' 'positive-time-to-live hosts 3600' 'negative-time-to-live hosts 20' \
    'shared hosts yes' 'persistent hosts no' 'check-files hosts no' 'enable-cache passwd no' \
    'enable-cache group no' 'enable-cache services no' 'enable-cache netgroup no' > "$work/nscd.conf"
printf '[Resolver]\nUpstream=system\nMinTTL=1h\n' > "$work/httpdnsd.conf"

# in_namespace NSSWITCH HOSTS COMMAND...: COMMAND with those files and the daemon at /run/httpdnsd.
# It execs, so call it in a subshell: $(...) or &, where $! is then the command's own pid.
in_namespace() {
    nsswitch=$1
    hosts_file=$2
    shift 2
    exec unshare -m -- sh -c '
        set -e
        mount --bind "$1" /etc/nsswitch.conf
        mount --bind "$2" /etc/hosts
        mount --bind "$3/resolv.conf" /etc/resolv.conf
        mount -t tmpfs -o mode=0755 tmpfs /run
        if [ -d /var/run/nscd ]; then mount -t tmpfs tmpfs /var/run/nscd; fi
        mkdir /run/httpdnsd
        mount --bind "$3/run" /run/httpdnsd
        shift 3
        exec "$@"' sh "$nsswitch" "$hosts_file" "$work" "$@"
}

# The daemon resolves the name through its system upstream from its own /etc/hosts, once.
in_namespace "$work/nsswitch-files" "$work/hosts-with-name" env SWIFT_BACKTRACE=enable=no "$daemon" \
    --config "$work/httpdnsd.conf" --socket /run/httpdnsd/httpdnsd.sock --state-dir "$work/state" \
    2>"$work/daemon.log" &
daemon_pid=$!
/usr/bin/python3 -u "$here/dns_responder.py" 127.0.0.77 53 "$name=$address" > "$work/dns.log" 2>&1 &
dns_pid=$!
for _ in $(seq 100); do
    [ -S "$work/run/httpdnsd.sock" ] && grep -q ready "$work/dns.log" && break
    sleep 0.1
done
[ -S "$work/run/httpdnsd.sock" ] || { cat "$work/daemon.log" >&2; exit 1; }
grep -q ready "$work/dns.log" || { cat "$work/dns.log" >&2; exit 1; }

run() { # run SOURCE: one measurement line (call it in a subshell)
    case $1 in
        files) hosts=$work/hosts-with-name ;;
        *) hosts=$work/hosts-plain ;;
    esac
    LD_LIBRARY_PATH=$work/lib
    export LD_LIBRARY_PATH
    case $1 in
        module) in_namespace "$work/nsswitch-files" "$hosts" "$work/module_bench" "$work/lib/libnss_httpdns.so.2" \
            "$name" "$calls" ;;
        module-socket) in_namespace "$work/nsswitch-files" "$hosts" "$work/module_bench" \
            "$work/lib/libnss_httpdns.so.2" "$(echo "$name" | tr a-z A-Z)" "$calls" ;;
        nscd) in_namespace "$work/nsswitch-files" "$work/hosts-with-name" sh -c '
            mkdir -p /run/nscd
            "$1" -F -f "$2" >/dev/null 2>&1 &
            nscd_pid=$!
            for _ in $(seq 100); do [ -S /run/nscd/socket ] && break; sleep 0.05; done
            status=0
            "$3" "$4" "$5" || status=$?
            kill "$nscd_pid"
            wait "$nscd_pid" 2>/dev/null || true
            exit "$status"' sh "$nscd" "$work/nscd.conf" "$work/gai_bench" "$name" "$calls" ;;
        *) in_namespace "$work/nsswitch-$1" "$hosts" "$work/gai_bench" "$name" "$calls" ;;
    esac
}

: > "$work/results"
for rep in $(seq "$reps"); do
    for source in $sources; do
        line=$(run "$source")
        echo "rep $rep $source: $line"
        echo "$source $line" >> "$work/results"
    done
done

echo
echo "| hosts: | p50 (us) | p90 (us) | p99 (us) |"
echo "| --- | --- | --- | --- |"
for source in $sources; do
    grep "^$source " "$work/results" | awk -v source="$source" '
        { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1], NR] = kv[2] } n = NR }
        END {
            # the median of each column over the repetitions
            split("p50_us p90_us p99_us", keys, " ")
            line = "| " source
            for (k = 1; k <= 3; k++) {
                m = 0
                for (r = 1; r <= n; r++) { if ((keys[k], r) in v) vals[++m] = v[keys[k], r] + 0 }
                for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (vals[j] < vals[i]) { t = vals[i]; vals[i] = vals[j]; vals[j] = t }
                line = line " | " vals[int((m + 1) / 2)]
                delete vals
            }
            print line " |"
        }'
done
