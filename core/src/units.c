/* Rates ("100Mbit", "1Gbit/s", "12.5MB/s") and times ("50us", "1ms"). */
#include "tc_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static double si_prefix(char c)
{
    switch (c) {
    case 'k': case 'K': return 1e3;
    case 'M': case 'm': return 1e6;   /* tc writes "100mbit"; milli-bits are no rate */
    case 'G': case 'g': return 1e9;
    case 'T': case 't': return 1e12;
    default: return 0;
    }
}

/* A decimal number at the start of text: digits with at most one point and
 * an optional exponent ("12", "1.5", ".5", "1e3").  strtod alone would also
 * take hexadecimal ("0x10"), "inf" and "nan".  Returns the number of bytes
 * read, 0 if there is no such number. */
static size_t decimal(const char *text, double *v)
{
    const char *p = text;
    size_t digits = 0;
    while (isdigit((unsigned char)*p)) { p++; digits++; }
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p)) { p++; digits++; }
    }
    if (!digits) return 0;
    if (*p == 'e' || *p == 'E') {
        const char *e = p + 1;
        if (*e == '+' || *e == '-') e++;
        if (isdigit((unsigned char)*e)) {
            while (isdigit((unsigned char)*e)) e++;
            p = e;
        }
    }
    char buf[64];
    size_t n = (size_t)(p - text);
    if (n >= sizeof buf) return 0;   /* longer than any plausible value */
    memcpy(buf, text, n);
    buf[n] = '\0';
    *v = strtod(buf, NULL);
    return n;
}

tc_status tc_parse_rate(const char *text, double bare_unit, double *out)
{
    if (!text || !out) TC_FAIL(TC_ERR_ARG, "rate: no text given");
    double v = 0;
    size_t n = decimal(text, &v);
    if (!n || !(v > 0))
        TC_FAIL(TC_ERR_PARSE, "rate '%s': expected a positive decimal number with a unit, e.g. 100Mbit", text);
    const char *end = text + n;
    while (*end == ' ') end++;
    double mult = 1, scale = 1;
    if (*end == '\0') {
        if (bare_unit <= 0) TC_FAIL(TC_ERR_PARSE, "rate '%s' needs a unit, e.g. 100Mbit or 1Gbit", text);
        mult = bare_unit;
    } else {
        mult = si_prefix(*end);
        const char *unit = mult > 0 ? end + 1 : end;
        if (mult == 0) mult = 1;
        if (*unit == '\0' || !strcasecmp(unit, "bit") || !strcasecmp(unit, "bit/s") ||
            !strcasecmp(unit, "bps") || !strcmp(unit, "b/s") || !strcmp(unit, "b"))
            scale = 1;
        else if (!strcmp(unit, "B/s") || !strcmp(unit, "B") || !strcmp(unit, "Bps") ||
                 !strcasecmp(unit, "byte/s"))
            scale = 8;
        else
            TC_FAIL(TC_ERR_PARSE, "rate '%s': unknown unit '%s' (use bit, bit/s, bps or B/s with k, M, G, T)",
                    text, end);
    }
    double r = v * mult * scale;
    if (!isfinite(r) || r < TC_MIN_RATE || r > TC_MAX_RATE)
        TC_FAIL(TC_ERR_PARSE, "rate '%s' is outside the plausible range 1kbit to 1000Tbit (1 kbit/s to 1 Pbit/s)",
                text);
    *out = r;
    return TC_OK;
}

tc_status tc_parse_time(const char *text, double bare_unit, double *out)
{
    if (!text || !out) TC_FAIL(TC_ERR_ARG, "time: no text given");
    double v = 0;
    size_t n = decimal(text, &v);
    if (!n) TC_FAIL(TC_ERR_PARSE, "time '%s': expected a non-negative decimal number with a unit, e.g. 50us", text);
    const char *end = text + n;
    while (*end == ' ') end++;
    double mult;
    if (*end == '\0') {
        if (bare_unit <= 0) TC_FAIL(TC_ERR_PARSE, "time '%s' needs a unit, e.g. 50us or 1ms", text);
        mult = bare_unit;
    } else if (!strcmp(end, "s")) mult = 1;
    else if (!strcmp(end, "ms")) mult = 1e-3;
    else if (!strcmp(end, "us")) mult = 1e-6;
    else if (!strcmp(end, "ns")) mult = 1e-9;
    else TC_FAIL(TC_ERR_PARSE, "time '%s': unknown unit '%s' (use s, ms, us or ns)", text, end);
    double t = v * mult;
    if (!isfinite(t) || t > TC_MAX_TIME)
        TC_FAIL(TC_ERR_PARSE, "time '%s' is longer than the limit of %g s", text, TC_MAX_TIME);
    *out = t;
    return TC_OK;
}

/* The limits of topocoll.h by name, for the bindings (one home). */
double tc_limit(const char *name)
{
    static const struct { const char *name; double value; } limits[] = {
        {"machines", TC_MAX_MACHINES}, {"switches", TC_MAX_SWITCHES}, {"levels", TC_MAX_LEVELS},
        {"name_len", TC_MAX_NAME_LEN}, {"hostlist_names", TC_MAX_HOSTLIST_NAMES},
        {"file_bytes", (double)TC_MAX_FILE_BYTES}, {"nesting", TC_MAX_NESTING}, {"min_rate", TC_MIN_RATE},
        {"max_rate", TC_MAX_RATE}, {"max_time", TC_MAX_TIME}, {"plan_messages", (double)TC_MAX_PLAN_MESSAGES},
        {"bare_rate_unit", TC_BARE_RATE_UNIT},
    };
    for (size_t i = 0; name && i < sizeof limits / sizeof limits[0]; i++)
        if (!strcmp(limits[i].name, name)) return limits[i].value;
    return -1;
}

/* Shortest exact-looking text: the largest unit giving a value >= 1. */
static void format_scaled(double v, const double *scales, const char *const *units, int n,
                          char *buf, size_t len)
{
    int i = 0;
    while (i < n - 1 && v < scales[i]) i++;
    snprintf(buf, len, "%.10g%s", v / scales[i], units[i]);
}

void tc_format_rate(double bps, char *buf, size_t len)
{
    static const double sc[] = {1e12, 1e9, 1e6, 1e3, 1};
    static const char *const un[] = {"Tbit", "Gbit", "Mbit", "kbit", "bit"};
    format_scaled(bps, sc, un, 5, buf, len);
}

void tc_format_time(double s, char *buf, size_t len)
{
    static const double sc[] = {1, 1e-3, 1e-6, 1e-9};
    static const char *const un[] = {"s", "ms", "us", "ns"};
    if (s == 0) { snprintf(buf, len, "0s"); return; }
    format_scaled(s, sc, un, 4, buf, len);
}
