/* --trace FILE (event_trace.h) */
#include "event_trace.h"

#include <ns3/simulator.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace {
FILE *g_file = nullptr;
bool g_tcp = false;
}

std::string event_trace_open(const std::string &path)
{
    g_file = fopen(path.c_str(), "w");
    return g_file ? "" : "cannot write the trace " + path + ": " + strerror(errno);
}

bool event_tracing() { return g_file != nullptr; }

void event_trace_tcp(bool on) { g_tcp = on; }

bool event_tracing_tcp() { return g_file != nullptr && g_tcp; }

void event_trace(const char *fmt, ...)
{
    if (!g_file) return;
    fprintf(g_file, "%.9f ", ns3::Simulator::Now().GetSeconds());
    va_list ap;
    va_start(ap, fmt);
    vfprintf(g_file, fmt, ap);
    va_end(ap);
    fputc('\n', g_file);
}

bool event_trace_close()
{
    if (!g_file) return true;
    const bool ok = !ferror(g_file);
    const bool closed = fclose(g_file) == 0;
    g_file = nullptr;
    return ok && closed;
}
