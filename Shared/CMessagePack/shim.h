// msgpack-c from Debian's libmsgpack-dev.
#include <msgpack.h>
