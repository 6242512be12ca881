// zstd from Debian's libzstd-dev: detection's device rows, compressed against a dictionary.
#include <zstd.h>
