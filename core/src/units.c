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

tc_status tc_parse_rate(const char *text, double bare_unit, double *out)
{
    if (!text || !out) TC_FAIL(TC_ERR_ARG, "rate: no text given");
    char *end;
    double v = strtod(text, &end);
    if (end == text || !isfinite(v) || v <= 0)
        TC_FAIL(TC_ERR_PARSE, "rate '%s': expected a positive number with a unit, e.g. 100Mbit", text);
    while (*end == ' ') end++;
    if (*end == '\0') {
        if (bare_unit > 0) { *out = v * bare_unit; return TC_OK; }
        TC_FAIL(TC_ERR_PARSE, "rate '%s' needs a unit, e.g. 100Mbit or 1Gbit", text);
    }
    double mult = si_prefix(*end);
    const char *unit = mult > 0 ? end + 1 : end;
    if (mult == 0) mult = 1;
    double scale;
    if (*unit == '\0' || !strcasecmp(unit, "bit") || !strcasecmp(unit, "bit/s") ||
        !strcasecmp(unit, "bps") || !strcmp(unit, "b/s") || !strcmp(unit, "b"))
        scale = 1;
    else if (!strcmp(unit, "B/s") || !strcmp(unit, "B") || !strcmp(unit, "Bps") ||
             !strcasecmp(unit, "byte/s"))
        scale = 8;
    else
        TC_FAIL(TC_ERR_PARSE, "rate '%s': unknown unit '%s' (use bit, bit/s, bps or B/s with k, M, G, T)",
                text, end);
    if (unit == end && *unit == '\0') scale = 1;
    *out = v * mult * scale;
    return TC_OK;
}

tc_status tc_parse_time(const char *text, double bare_unit, double *out)
{
    if (!text || !out) TC_FAIL(TC_ERR_ARG, "time: no text given");
    char *end;
    double v = strtod(text, &end);
    if (end == text || !isfinite(v) || v < 0)
        TC_FAIL(TC_ERR_PARSE, "time '%s': expected a non-negative number with a unit, e.g. 50us", text);
    while (*end == ' ') end++;
    double mult;
    if (*end == '\0') {
        if (bare_unit > 0) { *out = v * bare_unit; return TC_OK; }
        TC_FAIL(TC_ERR_PARSE, "time '%s' needs a unit, e.g. 50us or 1ms", text);
    } else if (!strcmp(end, "s")) mult = 1;
    else if (!strcmp(end, "ms")) mult = 1e-3;
    else if (!strcmp(end, "us")) mult = 1e-6;
    else if (!strcmp(end, "ns")) mult = 1e-9;
    else TC_FAIL(TC_ERR_PARSE, "time '%s': unknown unit '%s' (use s, ms, us or ns)", text, end);
    *out = v * mult;
    return TC_OK;
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
