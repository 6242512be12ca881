// SQLite from Debian's libsqlite3-dev (3.40), linked directly.
#include <sqlite3.h>
