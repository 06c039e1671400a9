/* The one error convention: a status code plus a per-thread message. */
#include "tc_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char tc_err_msg[1024];
static _Thread_local char tc_err_origin[256];

const char *tc_status_name(tc_status s)
{
    switch (s) {
    case TC_OK: return "ok";
    case TC_ERR_ARG: return "invalid argument";
    case TC_ERR_NOMEM: return "out of memory";
    case TC_ERR_IO: return "i/o error";
    case TC_ERR_PARSE: return "parse error";
    case TC_ERR_TOPOLOGY: return "invalid topology";
    case TC_ERR_UNSUPPORTED: return "unsupported";
    case TC_ERR_VERIFY: return "verification failed";
    case TC_ERR_LIMIT: return "limit exceeded";
    }
    return "unknown status";
}

tc_status tc_error_set(tc_status s, const char *file, int line, const char *fmt, ...)
{
    /* Format aside first: callers often wrap the previous message
     * (tc_error_message() as an argument), which lives in tc_err_msg. */
    char tmp[sizeof tc_err_msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    memcpy(tc_err_msg, tmp, sizeof tmp);
    const char *base = strrchr(file, '/');
    snprintf(tc_err_origin, sizeof tc_err_origin, "%s:%d", base ? base + 1 : file, line);
    return s;
}

const char *tc_error_message(void) { return tc_err_msg; }
const char *tc_error_origin(void) { return tc_err_origin; }

void tc_error_clear(void)
{
    tc_err_msg[0] = '\0';
    tc_err_origin[0] = '\0';
}

void *tc_xmalloc(size_t n) { return malloc(n ? n : 1); }
void *tc_xcalloc(size_t n, size_t size) { return calloc(n ? n : 1, size ? size : 1); }

char *tc_strdup(const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}
