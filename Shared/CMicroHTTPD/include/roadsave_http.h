// libmicrohttpd from Debian's libmicrohttpd-dev: the services' /metrics, /healthz and /readyz endpoint.
// MHD_start_daemon and MHD_get_daemon_info are variadic, which Swift cannot call, so this shim starts a daemon with
// the options the services use and says which port it took.
#ifndef ROADSAVE_HTTP_H
#define ROADSAVE_HTTP_H

#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// Starts a daemon with its own polling thread, listening on `address` (IPv4 or IPv6), answering with `handler`.
/// At most `connection_limit` connections at once; an idle one is closed after `timeout_seconds`. NULL on failure
/// (errno tells why, as libmicrohttpd leaves it).
struct MHD_Daemon *roadsave_http_start(const struct sockaddr *address, MHD_AccessHandlerCallback handler, void *context,
                                       unsigned int connection_limit, unsigned int timeout_seconds);

/// The port the daemon listens on (the one the system chose, for port 0); 0 if unknown.
uint16_t roadsave_http_port(struct MHD_Daemon *daemon);

/// A response holding its own copy of `size` bytes at `data` (the caller's buffer may go at once).
struct MHD_Response *roadsave_http_response_copy(const void *data, size_t size);

#endif
