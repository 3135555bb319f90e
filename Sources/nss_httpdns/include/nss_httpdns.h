/* libnss_httpdns.so.2: the glibc NSS "hosts" module of httpdnsd (nss-httpdns(8)).
 *
 * glibc loads it when /etc/nsswitch.conf lists "httpdns" on its hosts line and calls these entry
 * points; they are the only symbols the library exports. Forward lookups are the daemon's
 * "resolve" method, reverse lookups its "reverse" method (the caller's own IP -> host memory). */
#ifndef NSS_HTTPDNS_H
#define NSS_HTTPDNS_H

#include <netdb.h>
#include <nss.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* getaddrinfo(3) with AF_UNSPEC: every address of the name, IPv4 first, as a list of tuples. */
enum nss_status _nss_httpdns_gethostbyname4_r(const char *name, struct gaih_addrtuple **pat, char *buffer,
                                              size_t buflen, int *errnop, int *h_errnop, int32_t *ttlp);

/* The addresses of one family (AF_INET or AF_INET6) as a hostent, with the TTL and canonical name. */
enum nss_status _nss_httpdns_gethostbyname3_r(const char *name, int af, struct hostent *host, char *buffer,
                                              size_t buflen, int *errnop, int *h_errnop, int32_t *ttlp,
                                              char **canonp);

enum nss_status _nss_httpdns_gethostbyname2_r(const char *name, int af, struct hostent *host, char *buffer,
                                              size_t buflen, int *errnop, int *h_errnop);

/* AF_INET. */
enum nss_status _nss_httpdns_gethostbyname_r(const char *name, struct hostent *host, char *buffer, size_t buflen,
                                             int *errnop, int *h_errnop);

/* The host names the daemon handed addr out for to the calling user, most recent first (h_name,
   then h_aliases). An IPv4-mapped or IPv4-compatible IPv6 address is looked up as IPv4 and
   answered in the form asked for. An address the daemon never handed out to this user is
   UNAVAIL (HOST_NOT_FOUND), so that the next source, usually DNS, answers it. */
enum nss_status _nss_httpdns_gethostbyaddr2_r(const void *addr, socklen_t len, int af, struct hostent *host,
                                              char *buffer, size_t buflen, int *errnop, int *h_errnop,
                                              int32_t *ttlp);

enum nss_status _nss_httpdns_gethostbyaddr_r(const void *addr, socklen_t len, int af, struct hostent *host,
                                             char *buffer, size_t buflen, int *errnop, int *h_errnop);

#endif
