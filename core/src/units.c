/* Rates ("100Mbit", "1Gbit/s", "12.5MB/s") and times ("50us", "1ms"). */
#include "tc_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Decimal exponents of the SI prefixes; 0 for no prefix. */
static int si_prefix(char c)
{
    switch (c) {
    case 'k': case 'K': return 3;
    case 'M': case 'm': return 6;   /* tc writes "100mbit"; milli-bits are no rate */
    case 'G': case 'g': return 9;
    case 'T': case 't': return 12;
    default: return 0;
    }
}

/* The length of a decimal number at the start of text: digits with at most
 * one point and an optional exponent ("12", "1.5", ".5", "1e3").  strtod
 * alone would also take hexadecimal ("0x10"), "inf" and "nan".  0 if there
 * is no such number. */
static size_t scan_decimal(const char *text)
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
    return (size_t)(p - text);
}

/* The number of text[0..n) times 10^shift, rounded once (strtod of the
 * shifted decimal), so that "1.001G" and "1001M" are the same double and
 * what tc_format_rate writes reads back exactly. */
static double decimal_value(const char *text, size_t n, int shift)
{
    char buf[96];
    const char *e = memchr(text, 'e', n);
    if (!e) e = memchr(text, 'E', n);
    size_t mant = e ? (size_t)(e - text) : n;
    long exp = 0;
    if (e) {
        const char *q = e + 1;
        int neg = *q == '-';
        if (*q == '+' || *q == '-') q++;
        for (; q < text + n; q++) exp = exp < 100000 ? exp * 10 + (*q - '0') : exp;
        if (neg) exp = -exp;
    }
    if (mant > 64) mant = 64;   /* digits past a double's precision change nothing */
    snprintf(buf, sizeof buf, "%.*se%ld", (int)mant, text, exp + shift);
    return strtod(buf, NULL);
}

/* The number of text[0..n) in a bare unit: shifted in decimal (rounded
 * once) when the unit is a power of ten, else multiplied. */
static double in_unit(const char *text, size_t n, double unit)
{
    static const double powers[] = {1e-9, 1e-6, 1e-3, 1, 1e3, 1e6, 1e9, 1e12};
    for (int i = 0; i < 8; i++)
        if (unit == powers[i]) return decimal_value(text, n, 3 * i - 9);
    return decimal_value(text, n, 0) * unit;
}

tc_status tc_parse_rate(const char *text, double bare_unit, double *out)
{
    if (!text || !out) TC_FAIL(TC_ERR_ARG, "rate: no text given");
    size_t n = scan_decimal(text);
    if (!n || !(decimal_value(text, n, 0) > 0))
        TC_FAIL(TC_ERR_PARSE, "rate '%s': expected a positive decimal number with a unit, e.g. 100Mbit", text);
    const char *end = text + n;
    while (*end == ' ') end++;
    double r;
    if (*end == '\0') {
        if (bare_unit <= 0) TC_FAIL(TC_ERR_PARSE, "rate '%s' needs a unit, e.g. 100Mbit or 1Gbit", text);
        r = in_unit(text, n, bare_unit);
    } else {
        int k = si_prefix(*end);
        const char *unit = k ? end + 1 : end;
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
        r = decimal_value(text, n, k) * scale;   /* x8 is exact */
    }
    if (!isfinite(r) || r < TC_MIN_RATE || r > TC_MAX_RATE)
        TC_FAIL(TC_ERR_PARSE, "rate '%s' is outside the plausible range 1kbit to 1000Tbit (1 kbit/s to 1 Pbit/s)",
                text);
    *out = r;
    return TC_OK;
}

tc_status tc_parse_time(const char *text, double bare_unit, double *out)
{
    if (!text || !out) TC_FAIL(TC_ERR_ARG, "time: no text given");
    size_t n = scan_decimal(text);
    if (!n) TC_FAIL(TC_ERR_PARSE, "time '%s': expected a non-negative decimal number with a unit, e.g. 50us", text);
    const char *end = text + n;
    while (*end == ' ') end++;
    double t;
    if (*end == '\0') {
        if (bare_unit <= 0 && decimal_value(text, n, 0) != 0)   /* zero needs no unit */
            TC_FAIL(TC_ERR_PARSE, "time '%s' needs a unit, e.g. 50us or 1ms", text);
        t = bare_unit > 0 ? in_unit(text, n, bare_unit) : 0;
    } else {
        int k = !strcmp(end, "s") ? 0 : !strcmp(end, "ms") ? -3 : !strcmp(end, "us") ? -6 : !strcmp(end, "ns") ? -9 : 1;
        if (k == 1) TC_FAIL(TC_ERR_PARSE, "time '%s': unknown unit '%s' (use s, ms, us or ns)", text, end);
        t = decimal_value(text, n, k);
    }
    if (!isfinite(t) || t > TC_MAX_TIME)
        TC_FAIL(TC_ERR_PARSE, "time '%s' is longer than the limit of %g s", text, TC_MAX_TIME);
    *out = t;
    return TC_OK;
}

tc_status tc_parse_size(const char *text, long long *bytes)
{
    if (!text || !bytes) TC_FAIL(TC_ERR_ARG, "size: no text given");
    size_t n = scan_decimal(text);
    if (!n) TC_FAIL(TC_ERR_PARSE, "size '%s': expected bytes such as 8K, 64K or 1M", text);
    const char *end = text + n;
    double mult = 1;
    switch (*end) {
    case 'k': case 'K': mult = 1024.0; end++; break;
    case 'm': case 'M': mult = 1024.0 * 1024; end++; break;
    case 'g': case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
    }
    if (*end == 'B' || *end == 'b') end++;
    if (*end) TC_FAIL(TC_ERR_PARSE, "size '%s': expected bytes such as 8K, 64K or 1M (K, M, G, T: powers of 1024)", text);
    double v = decimal_value(text, n, 0) * mult;
    if (!(v <= TC_MAX_SIZE)) TC_FAIL(TC_ERR_PARSE, "size '%s' is larger than the limit of 1T", text);
    if (v != (double)(long long)v) TC_FAIL(TC_ERR_PARSE, "size '%s' is not a whole number of bytes", text);
    *bytes = (long long)v;
    return TC_OK;
}

/* The limits and defaults of topocoll.h by name, for the bindings (their
 * one home stays the header). */
typedef struct named_value { const char *name; double value; } named_value;

static double lookup(const named_value *table, size_t n, const char *name)
{
    for (size_t i = 0; name && i < n; i++)
        if (!strcmp(table[i].name, name)) return table[i].value;
    return -1;
}

double tc_limit(const char *name)
{
    static const named_value limits[] = {
        {"machines", TC_MAX_MACHINES}, {"switches", TC_MAX_SWITCHES}, {"levels", TC_MAX_LEVELS},
        {"name_len", TC_MAX_NAME_LEN}, {"hostlist_names", TC_MAX_HOSTLIST_NAMES},
        {"file_bytes", (double)TC_MAX_FILE_BYTES}, {"nesting", TC_MAX_NESTING}, {"min_rate", TC_MIN_RATE},
        {"max_rate", TC_MAX_RATE}, {"max_time", TC_MAX_TIME}, {"plan_messages", (double)TC_MAX_PLAN_MESSAGES},
        {"max_size", TC_MAX_SIZE}, {"bare_rate_unit", TC_BARE_RATE_UNIT}, {"tuning_rules", TC_MAX_TUNING_RULES},
        {"capacitated_cells", (double)TC_MAX_CAPACITATED_CELLS},
    };
    return lookup(limits, sizeof limits / sizeof limits[0], name);
}

/* The testbed's u32 filter matches "IPv4 length < TC_SHORT_PACKET_BYTES" with one mask */
_Static_assert((TC_SHORT_PACKET_BYTES & (TC_SHORT_PACKET_BYTES - 1)) == 0, "TC_SHORT_PACKET_BYTES must be a power of two");

double tc_default(const char *name)
{
    static const named_value defaults[] = {
        {"fanout", TC_DEFAULT_FANOUT}, {"bandwidth", TC_DEFAULT_BANDWIDTH}, {"latency", TC_DEFAULT_LATENCY},
        {"segment_size", TC_DEFAULT_SEGMENT_SIZE}, {"plan_whole_max_ranks", TC_PLAN_WHOLE_MAX_RANKS},
        {"pace_lead", TC_DEFAULT_PACE_LEAD}, {"capacitated_pace_lead", TC_DEFAULT_CAPACITATED_PACE_LEAD},
        {"pace_lead_share", TC_DEFAULT_PACE_LEAD_SHARE}, {"short_packet", TC_SHORT_PACKET_BYTES},
        {"ethernet_frame", TC_ETHERNET_FRAME}, {"shaper_burst", TC_SHAPER_BURST_S},
        {"shaper_class_frames", TC_SHAPER_CLASS_FRAMES}, {"shaper_class_burst", TC_SHAPER_CLASS_BURST},
    };
    return lookup(defaults, sizeof defaults / sizeof defaults[0], name);
}

double tc_shaper_bucket(double rate_bps)
{
    const double bytes = rate_bps / 8 * TC_SHAPER_BURST_S, least = TC_SHAPER_CLASS_BURST;
    return bytes > least ? bytes : least;
}

/* Shortest text that reads back as v: the largest unit giving a value >= 1,
 * with as few significant digits (10 to 17) as the round trip needs. */
static void format_scaled(double v, const double *scales, const char *const *units, const int *shifts, int n,
                          char *buf, size_t len)
{
    int i = 0;
    while (i < n - 1 && v < scales[i]) i++;
    for (int digits = 10; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g%s", digits, v / scales[i], units[i]);
        size_t k = scan_decimal(buf);
        if (k && decimal_value(buf, k, shifts[i]) == v) return;
    }
}

void tc_format_rate(double bps, char *buf, size_t len)
{
    static const double sc[] = {1e12, 1e9, 1e6, 1e3, 1};
    static const char *const un[] = {"Tbit", "Gbit", "Mbit", "kbit", "bit"};
    static const int sh[] = {12, 9, 6, 3, 0};
    format_scaled(bps, sc, un, sh, 5, buf, len);
}

void tc_format_time(double s, char *buf, size_t len)
{
    static const double sc[] = {1, 1e-3, 1e-6, 1e-9};
    static const char *const un[] = {"s", "ms", "us", "ns"};
    static const int sh[] = {0, -3, -6, -9};
    if (s == 0) { snprintf(buf, len, "0s"); return; }
    format_scaled(s, sc, un, sh, 4, buf, len);
}
