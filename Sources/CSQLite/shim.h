#pragma once
#include <sqlite3.h>

/* SQLITE_TRANSIENT and SQLITE_STATIC are cast macros Swift cannot import. */
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }
static inline sqlite3_destructor_type csqlite_static(void) { return SQLITE_STATIC; }

/* sqlite3_config is variadic. Memory statistics take a global mutex around every allocation,
   and nothing here reads them. SQLITE_MISUSE once SQLite is initialized (nothing changes then). */
static inline int csqlite_disable_memory_statistics(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }
