#pragma once
#include <systemd/sd-daemon.h>
#include <systemd/sd-id128.h>
#include <systemd/sd-journal.h>

/* sd_id128_get_boot as a lowercase hex string (33 bytes with NUL); SD_ID128_TO_STRING is a macro. */
static inline int csystemd_boot_id(char out[33]) {
    sd_id128_t id;
    int r = sd_id128_get_boot(&id);
    if (r < 0) return r;
    sd_id128_to_string(id, out);
    return 0;
}
