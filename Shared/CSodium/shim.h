// libsodium from Debian's libsodium-dev (HMAC-SHA256 for webhook signatures).
#include <sodium.h>
