// SQLite for Swift: the header, and the SQLITE_TRANSIENT destructor that is a macro in C.
#ifndef SCANGATE_SQLITE_H
#define SCANGATE_SQLITE_H
#include <sqlite3.h>
/// sqlite3_bind_text with SQLITE_TRANSIENT (SQLite copies the bytes).
int sg_sqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, int length);
/// sqlite3_bind_blob with SQLITE_TRANSIENT.
int sg_sqlite_bind_blob(sqlite3_stmt *statement, int index, const void *bytes, int length);
#endif
