"""What the C library answers for names and addresses, under every getaddrinfo hint that changes
which NSS entry point glibc calls and how it shapes the answer.

usage: resolver_matrix.py NAME... -- ADDRESS...

Prints one JSON object: getaddrinfo per name, family and flags (AF_UNSPEC goes through
gethostbyname4_r, AF_INET/AF_INET6 through gethostbyname3_r/2_r; AI_V4MAPPED, AI_ALL,
AI_ADDRCONFIG and AI_CANONNAME are glibc's own work on the module's answer), gethostbyname_ex
per name (gethostbyname_r) and gethostbyaddr per address (gethostbyaddr_r). The same run under
"hosts: files" with an equivalent hosts file and under "hosts: httpdns" must print the same.
Errors that only say "no address" (EAI_NONAME, EAI_NODATA, HOST_NOT_FOUND, NO_DATA) are one
answer: nss_files cannot tell a name without addresses of a family from no name at all.
"""
import json
import socket
import sys

FAMILIES = {"unspec": socket.AF_UNSPEC, "inet": socket.AF_INET, "inet6": socket.AF_INET6}
FLAGS = {
    "none": 0,
    "canonname": socket.AI_CANONNAME,
    "v4mapped": socket.AI_V4MAPPED,
    "v4mapped-all": socket.AI_V4MAPPED | socket.AI_ALL,
    "addrconfig": socket.AI_ADDRCONFIG,
    "addrconfig-v4mapped": socket.AI_ADDRCONFIG | socket.AI_V4MAPPED,
}
NO_ADDRESS = "no address"


def gai_error(error):
    if error.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", -5)):
        return NO_ADDRESS
    return "gaierror %d" % error.errno


def lookup(name, family, flags):
    try:
        infos = socket.getaddrinfo(name, None, family, socket.SOCK_STREAM, 0, flags)
    except socket.gaierror as error:
        return gai_error(error)
    return [[info[0].name, info[4][0], info[3]] for info in infos]


def host_error(error):
    # herror carries h_errno: 1 HOST_NOT_FOUND, 4 NO_DATA.
    return NO_ADDRESS if error.errno in (1, 4) else "herror %d" % error.errno


def by_name(name):
    try:
        return list(socket.gethostbyname_ex(name))
    except socket.herror as error:
        return host_error(error)
    except socket.gaierror as error:
        return gai_error(error)


def by_address(address):
    try:
        return list(socket.gethostbyaddr(address))
    except socket.herror as error:
        return host_error(error)
    except socket.gaierror as error:
        return gai_error(error)


def main():
    arguments = sys.argv[1:]
    split = arguments.index("--")
    names, addresses = arguments[:split], arguments[split + 1:]
    result = {"getaddrinfo": {}, "gethostbyname_ex": {}, "gethostbyaddr": {}}
    for name in names:
        for family_name, family in FAMILIES.items():
            for flags_name, flags in FLAGS.items():
                result["getaddrinfo"]["%s %s %s" % (name, family_name, flags_name)] = lookup(name, family, flags)
        result["gethostbyname_ex"][name] = by_name(name)
    for address in addresses:
        result["gethostbyaddr"][address] = by_address(address)
    print(json.dumps(result, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
