#include "roadsave_http.h"

struct MHD_Daemon *roadsave_http_start(const struct sockaddr *address, MHD_AccessHandlerCallback handler, void *context,
                                       unsigned int connection_limit, unsigned int timeout_seconds) {
    unsigned int flags = MHD_USE_POLL_INTERNAL_THREAD;
    if (address->sa_family == AF_INET6) flags |= MHD_USE_IPv6;
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, context,
                            MHD_OPTION_SOCK_ADDR, address,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                            MHD_OPTION_END);
}

uint16_t roadsave_http_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

struct MHD_Response *roadsave_http_response_copy(const void *data, size_t size) {
    return MHD_create_response_from_buffer(size, (void *)data, MHD_RESPMEM_MUST_COPY);
}
