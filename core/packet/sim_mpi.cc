/* MPI point-to-point over the simulated network: what mpi.h declares, for
 * the executor; the ranks as coroutines (sim_mpi.h says what is modelled). */
#include "sim_mpi.h"

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <list>
#include <memory>
#include <unordered_map>

#include "mpi.h"
#include "native_openmpi.h"
#include "probing_tcp.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"

using namespace ns3;

struct sim_request {
    int owner;
    bool send, done = false;
    int peer, tag;
    char *buf;
    long long bytes, got = 0;
};

namespace {

/* What a fragment is (mpi_options in sim_mpi.h tells the two rendezvous
 * apart): a whole message (EAGER); a rendezvous header and the bytes it
 * carries (RNDV); the receiver's answer (ACK: copy the rest; PUT_REQ: put
 * it); the rest, copied (DATA) or put in one fragment (PUT); the end of a
 * put (FIN); a connection's first bytes (HELLO). */
enum frag_kind { EAGER, RNDV, ACK, DATA, PUT_REQ, PUT, FIN, HELLO };

/* Bytes on the wire besides the data, by kind: the TCP BTL's header (8) and
 * ob1's (a match header 14, rendezvous 32, ack 40, fragment 32, put request
 * 56, FIN 24; a put carries a segment descriptor, 16, instead); the BTL's
 * connection handshake, 24.  An eager message's data is at most the BTL's
 * eager limit less ob1's largest header (56). */
constexpr int BTL_HDR = 8, OB1_LARGEST_HDR = 56;
int header_bytes(frag_kind k)
{
    switch (k) {
    case EAGER: return BTL_HDR + 14;
    case RNDV: return BTL_HDR + 32;
    case ACK: return BTL_HDR + 40;
    case DATA: return BTL_HDR + 32;
    case PUT_REQ: return BTL_HDR + 56;
    case PUT: return BTL_HDR + 16;
    case FIN: return BTL_HDR + 24;
    case HELLO: return 24;
    }
    return BTL_HDR;
}

struct message {
    int src, dst, tag;
    long long bytes, first = 0;       /* first: bytes the first fragment carries */
    sim_request *sreq, *rreq = nullptr;
    std::vector<char> data;           /* move_data: the payload, taken at the send */
};

struct frag {
    frag_kind kind;
    message *m;
    long long off, len, wire;
};

/* One direction of a connection: fragments in order, written into the
 * sender's socket and read from the receiver's. */
struct stream {
    int from = -1, to = -1;           /* the rank writing it, the rank reading it */
    Ptr<Socket> wsock;
    std::deque<frag> q;               /* from the oldest unread one */
    size_t wpos = 0;                  /* first fragment not wholly written */
    long long wbytes = 0, rbytes = 0; /* of q[wpos] written, of q[0] read */
    bool up = false, pumping = false;
    double recovering_since = -1;     /* its sender's fast recovery began then (none: -1) */
    double waiting_since = -1;        /* bytes wait for the reader to run, since then (none: -1) */
    bool awaiting_hello = false;      /* opened at a first message: only its HELLO goes until the peer's arrives */
};

struct rank_state {
#if defined(__x86_64__)
    void *sp = nullptr;               /* its stack pointer while switched out */
#else
    ucontext_t ctx;
#endif
    char *stack = nullptr;
    bool blocked = false, scheduled = false, in_barrier = false, finished = false;
    std::list<sim_request *> posted;
    std::list<message *> unexpected;
    /* Open MPI's TCP BTL reads and acts on what arrives only while the rank
     * is in an MPI call that progresses (no progress thread): fragments
     * wholly arrived while it was elsewhere (napping, pacing, computing) wait
     * here, in arrival order, for its next test, wait or barrier. */
    bool progressing = false;
    std::deque<frag> unread;
    MPI_Request *test_array = nullptr;   /* SIM_Testall's last unfinished scan */
    int test_n = 0, test_from = 0;
    /* with the host's cores modelled: on a core now; wanting one (not
     * napping, not finished); woken while off its core (it runs when it
     * next gets one) */
    bool oncpu = false, runnable = false, wake_pending = false;
    /* with idle_yield: waiting for a core with something to do (bytes
     * to read or room to write in its sockets, a wake), and the event by
     * which an idle rank on a core hands it over */
    bool work = false;
    EventId handoff;
};

tree_net *g_net;
mpi_options g_opt;
int g_machines = 0;                           /* = ranks: one a machine */
std::vector<rank_state> g_rank;
int g_cur = -1, g_arrived = 0, g_running = 0;
#if defined(__x86_64__)
void *g_main_sp;
#else
ucontext_t g_main;
#endif
std::unordered_map<long long, std::unique_ptr<stream>> g_streams;   /* from * machines + to */
const std::function<void(int)> *g_body;
sim_stats g_stats;
bool g_in_run = false;                        /* the ranks' programs are running */
int g_pending_connects = 0;
long long g_data_messages = 0;
constexpr uint16_t PORT = 5000;

[[noreturn]] void fatal(const char *what)
{
    fprintf(stderr, "topocoll-packet: internal error: %s\n", what);
    exit(3);
}

/* What was simulated cannot go on (as a real job would fail there): an
 * error of the settings, not of the simulator. */
[[noreturn]] static void run_failed(const std::string &what)
{
    fprintf(stderr, "topocoll-packet: error: %s\n", what.c_str());
    exit(2);
}

stream &stream_of(int from, int to)
{
    auto &s = g_streams[(long long)from * g_machines + to];
    if (!s) {
        s.reset(new stream);
        s->from = from;
        s->to = to;
    }
    return *s;
}

/* ---- ranks as coroutines ----
 * A rank's program runs on its own stack; the simulator's event loop
 * switches to it and it switches back when it waits.  On x86-64 a switch
 * saves the callee-saved registers and swaps stack pointers (glibc's
 * swapcontext also saves the signal mask, a system call each time: at 256
 * ranks napping every 200 us, 70 % of the run went there). */

void trampoline(int r);

#if defined(__x86_64__)
extern "C" void topocoll_switch_stack(void **save_sp, void *to_sp);
asm(".text\n"
    ".globl topocoll_switch_stack\n"
    ".type topocoll_switch_stack, @function\n"
    "topocoll_switch_stack:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size topocoll_switch_stack, .-topocoll_switch_stack\n");

void enter_rank() { trampoline(g_cur); }

void switch_to_rank(int r) { topocoll_switch_stack(&g_main_sp, g_rank[r].sp); }
void switch_to_main(int r) { topocoll_switch_stack(&g_rank[r].sp, g_main_sp); }
void prepare_stack(int r, size_t bytes)
{
    /* a frame that the first switch "returns" into enter_rank from, with
     * the stack aligned as at a function's entry */
    uintptr_t top = ((uintptr_t)g_rank[r].stack + bytes) & ~(uintptr_t)15;
    void **sp = (void **)top;
    *--sp = nullptr;                        /* enter_rank's return address: never used */
    *--sp = (void *)&enter_rank;
    for (int k = 0; k < 6; k++) *--sp = nullptr;   /* rbp rbx r12 r13 r14 r15 */
    g_rank[r].sp = sp;
}
#else
void switch_to_rank(int r) { swapcontext(&g_main, &g_rank[r].ctx); }
void switch_to_main(int r) { swapcontext(&g_rank[r].ctx, &g_main); }
void prepare_stack(int r, size_t bytes)
{
    rank_state &k = g_rank[r];
    getcontext(&k.ctx);
    k.ctx.uc_stack.ss_sp = k.stack;
    k.ctx.uc_stack.ss_size = bytes;
    k.ctx.uc_link = nullptr;
    makecontext(&k.ctx, (void (*)())trampoline, 1, r);
}
#endif

/* With the host's cores modelled (mpi_options::host_cores), a rank reads,
 * writes and runs only while it is on a core; the kernel's TCP goes on
 * regardless.  Defined below, with the scheduler. */
bool can_act(int r);
void cpu_runnable(int r);
void cpu_leave(int r);
void want_core(int r);
void offer_cores();

void resume(int r)
{
    rank_state &k = g_rank[r];
    k.scheduled = false;
    if (g_freezes.cores > 0 && !can_act(r)) {   /* its core froze in the instant it was woken: it runs on its next */
        k.wake_pending = true;
        want_core(r);
        return;
    }
    k.blocked = false;
    g_cur = r;
    switch_to_rank(r);
    g_cur = -1;
}

void wake(int r)
{
    rank_state &k = g_rank[r];
    if (!can_act(r)) {   /* it runs when it next gets a core */
        k.wake_pending = true;
        want_core(r);
        return;
    }
    if (k.blocked && !k.scheduled) {
        k.scheduled = true;
        Simulator::ScheduleNow(&resume, r);
    }
}

void block()
{
    rank_state &k = g_rank[g_cur];
    k.blocked = true;
    if (k.oncpu) offer_cores();   /* idle now: its core is the waiting ranks' at its next poll */
    switch_to_main(g_cur);
}

void trampoline(int r)
{
    (*g_body)(r);
    g_rank[r].finished = true;
    cpu_leave(r);
    if (--g_running == 0) Simulator::Stop();
    switch_to_main(r);
    fatal("a finished rank was resumed");
}

double g_last_progress = 0;   /* simulated time a request last completed */

void complete(sim_request *q)
{
    g_last_progress = Simulator::Now().GetSeconds();
    q->done = true;
    wake(q->owner);
}

/* ---- the wire ---- */

void on_written(const frag &f);

void pump(stream &s)
{
    if (!s.up || s.pumping || !can_act(s.from)) return;
    s.pumping = true;
    while (s.wpos < s.q.size() && !(s.awaiting_hello && s.q[s.wpos].kind != HELLO)) {
        uint32_t avail = s.wsock->GetTxAvailable();
        if (avail == 0) break;
        frag f = s.q[s.wpos];
        long long n = f.wire - s.wbytes < (long long)avail ? f.wire - s.wbytes : (long long)avail;
        int sent = s.wsock->Send(Create<Packet>((uint32_t)n));
        if (sent <= 0) break;
        s.wbytes += sent;
        g_stats.wire_bytes += (uint64_t)sent;
        if (s.wbytes == f.wire) {
            s.wpos++;
            s.wbytes = 0;
            on_written(f);
        }
    }
    s.pumping = false;
}

void open_at_first_message(int a, int b);

void enqueue(int from_rank, int to_rank, frag f)
{
    f.wire = f.len + header_bytes(f.kind);
    g_stats.fragments++;
    stream &s = stream_of(from_rank, to_rank);
    s.q.push_back(f);
    if (!s.up) open_at_first_message(from_rank, to_rank);
    pump(s);
}

void send_rest(message *m)
{
    const long long per = g_opt.max_send - (header_bytes(DATA) - BTL_HDR);
    for (long long off = m->first; off < m->bytes; off += per) {
        long long len = m->bytes - off < per ? m->bytes - off : per;
        enqueue(m->src, m->dst, frag{DATA, m, off, len, 0});
    }
}

void on_written(const frag &f)
{
    message *m = f.m;
    if (f.kind == EAGER || (f.kind == DATA && f.off + f.len == m->bytes)) complete(m->sreq);
    if (f.kind == PUT) {   /* the put is done: its send is, and a FIN follows whatever was queued meanwhile */
        complete(m->sreq);
        enqueue(m->src, m->dst, frag{FIN, m, 0, 0, 0});
    }
}

/* Bytes of m landing in its receive; `last` completes it (for a put, its FIN). */
void land(message *m, long long off, long long len, bool last)
{
    sim_request *q = m->rreq;
    if (g_opt.move_data && len > 0) memcpy(q->buf + off, m->data.data() + off, (size_t)len);
    q->got += len;
    if (last) {
        if (q->got != m->bytes) fatal("a message completed with bytes missing");
        complete(q);
        delete m;
    }
}

void take(message *m, long long off, long long len) { land(m, off, len, m->rreq->got + len == m->bytes); }

/* The receive matched to m (m's first fragment has arrived): its bytes so far. */
void matched(message *m, sim_request *q)
{
    if (m->bytes > q->bytes) fatal("a message longer than its receive");
    m->rreq = q;
    q->bytes = m->bytes;
    if (m->first < m->bytes) {
        g_stats.rendezvous++;
        enqueue(m->dst, m->src, frag{g_opt.rendezvous == rendezvous_kind::put ? PUT_REQ : ACK, m, 0, 0, 0});
    }
    if (m->first > 0 || m->bytes == 0) take(m, 0, m->first);
}

bool matches(const sim_request *q, const message *m)
{
    return (q->peer == MPI_ANY_SOURCE || q->peer == m->src) && (q->tag == MPI_ANY_TAG || q->tag == m->tag);
}

void arrived_first(message *m)
{
    auto &posted = g_rank[m->dst].posted;
    for (auto it = posted.begin(); it != posted.end(); ++it)
        if (matches(*it, m)) {
            sim_request *q = *it;
            posted.erase(it);
            matched(m, q);
            return;
        }
    g_rank[m->dst].unexpected.push_back(m);
}

void deliver(const frag &f)
{
    switch (f.kind) {
    case EAGER: case RNDV: arrived_first(f.m); break;
    case ACK: send_rest(f.m); break;
    case DATA: take(f.m, f.off, f.len); break;
    case PUT_REQ: enqueue(f.m->src, f.m->dst, frag{PUT, f.m, 0, f.m->bytes, 0}); break;
    case PUT: land(f.m, f.off, f.len, false); break;
    case FIN: land(f.m, 0, 0, true); break;
    case HELLO: break;   /* read as it arrives (on_recv) */
    }
}

/* The rank's BTL reads what has arrived for it (MPI's progress). */
void progress(int r)
{
    rank_state &k = g_rank[r];
    while (!k.unread.empty()) {
        frag f = k.unread.front();
        k.unread.pop_front();
        deliver(f);
    }
}

void on_recv(stream *s, Ptr<Socket> sock)
{
    const double now = Simulator::Now().GetSeconds();
    if (!can_act(s->to)) {   /* the bytes wait in the socket; its window shrinks */
        if (s->waiting_since < 0 && g_in_run) s->waiting_since = now;
        want_core(s->to);
        return;
    }
    if (s->waiting_since >= 0) {
        g_stats.reads_waited++;
        if (now - s->waiting_since >= 1e-3) g_stats.reads_late++;
        s->waiting_since = -1;
    }
    while (Ptr<Packet> p = sock->Recv()) {
        long long r = p->GetSize();
        while (r > 0) {
            if (s->q.empty()) fatal("bytes on a connection with nothing sent");
            frag f = s->q.front();
            long long take_n = f.wire - s->rbytes < r ? f.wire - s->rbytes : r;
            s->rbytes += take_n;
            r -= take_n;
            if (s->rbytes == f.wire) {
                s->q.pop_front();
                s->wpos--;
                s->rbytes = 0;
                rank_state &k = g_rank[s->to];
                if (f.kind == HELLO) {   /* the peer's handshake: a connection opened at a first message carries data now */
                    stream &back = stream_of(s->to, s->from);
                    if (back.awaiting_hello) {
                        back.awaiting_hello = false;
                        pump(back);
                    }
                } else if (k.progressing || k.finished) {
                    deliver(f);
                } else {
                    k.unread.push_back(f);
                }
            }
        }
    }
}

void on_space(stream *s, Ptr<Socket>, uint32_t)
{
    if (!can_act(s->from) && s->wpos < s->q.size()) want_core(s->from);
    pump(*s);
}

/* ---- the host's cores ----
 * The emulated cluster runs every machine's rank on one host of a few
 * cores.  A rank waiting in an MPI call spins (Open MPI's progress loop
 * polls), so it wants a core all the time; a napping or pacing rank sleeps
 * and wants none.  The ranks that want one take turns: a turn lasts a slice
 * (cpu_slice times a factor drawn uniformly from [0.5, 1.5), the jitter of
 * the host's interrupts and softirqs), then the rank goes to the back of
 * the queue if another waits; a rank that wakes from a nap goes to the
 * front (a sleeper's lag puts it ahead under the kernel's EEVDF), and a
 * rank idle on a core yields it to a waiting rank with something to do
 * (idle_yield, below).  Only on a core does a rank read what arrived,
 * answer it, write into its sockets or run its program.  A rank's work
 * itself takes no time. */
struct host_cpu {
    std::vector<int> on;              /* the rank on each core, -1 none, FROZEN while the host holds it */
    std::vector<int> held;            /* a frozen core's rank (-1 none): it goes on when the core thaws */
    std::vector<EventId> turn_end;
    std::deque<int> queue;            /* ranks waiting for a core */
    unsigned long long rng = 0;
    unsigned long long freeze_rng = 0;
};
constexpr int FROZEN = -2;
host_cpu g_cpu;

bool can_act(int r)
{
    const rank_state &k = g_rank[r];
    return g_opt.host_cores <= 0 || !g_in_run || k.oncpu || k.finished;
}

/* the host's draws (turns, freezes): a step of a 64-bit LCG on state, its top 53 bits */
double lcg_next(unsigned long long &state)
{
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(state >> 11);
}
constexpr double LCG_RANGE = 9007199254740992.0;   /* 2^53 */

double turn_length() { return g_opt.cpu_slice * (0.5 + lcg_next(g_cpu.rng) / LCG_RANGE); }

void end_turn(int core);

/* r takes core c: it catches up with what arrived and what it may write. */
void take_core(int c, int r)
{
    rank_state &k = g_rank[r];
    g_cpu.on[c] = r;
    k.oncpu = true;
    k.work = false;
    Simulator::Cancel(k.handoff);
    g_cpu.turn_end[c] = Simulator::Schedule(Seconds(turn_length()), &end_turn, c);
    for (int x = 0; x < g_machines && k.oncpu; x++) {
        if (x == r) continue;
        auto out = g_streams.find((long long)r * g_machines + x);
        if (out == g_streams.end()) continue;
        auto in = g_streams.find((long long)x * g_machines + r);
        if (in != g_streams.end() && out->second->wsock) on_recv(in->second.get(), out->second->wsock);
        pump(*out->second);
    }
    if (k.oncpu && k.progressing) progress(r);
    if (k.oncpu && k.wake_pending) {
        k.wake_pending = false;
        wake(r);
    }
}

/* r leaves the queue of ranks waiting for a core */
void dequeue(int r)
{
    auto it = std::find(g_cpu.queue.begin(), g_cpu.queue.end(), r);
    if (it != g_cpu.queue.end()) g_cpu.queue.erase(it);
}

/* Core c's rank goes to the back of the queue and next, from the queue,
 * takes the core. */
void hand_over(int c, int next)
{
    Simulator::Cancel(g_cpu.turn_end[c]);
    g_rank[g_cpu.on[c]].oncpu = false;
    dequeue(next);
    g_cpu.queue.push_back(g_cpu.on[c]);
    take_core(c, next);
}

void give_core(int c)
{
    g_cpu.on[c] = -1;
    if (!g_cpu.queue.empty()) {
        int r = g_cpu.queue.front();
        g_cpu.queue.pop_front();
        take_core(c, r);
    }
}

void end_turn(int c)
{
    if (g_cpu.queue.empty()) {   /* nobody waits: another turn */
        g_cpu.turn_end[c] = Simulator::Schedule(Seconds(turn_length()), &end_turn, c);
        return;
    }
    hand_over(c, g_cpu.queue.front());
}

void cpu_runnable(int r)
{
    rank_state &k = g_rank[r];
    if (g_opt.host_cores <= 0 || k.runnable) return;
    k.runnable = true;
    for (int c = 0; c < (int)g_cpu.on.size(); c++)
        if (g_cpu.on[c] == -1) {
            take_core(c, r);
            return;
        }
    g_cpu.queue.push_front(r);
    if (k.wake_pending) want_core(r);
}

/* Open MPI's yield when idle (mpi_options::idle_yield).  Its ranks on the
 * testbed spin in opal_progress and, finding nothing, call sched_yield: 11
 * ranks waiting in a barrier on its 2 cores yielded 885,000 times a
 * second, a poll of 2.3 us a core.  The ranks with nothing to do pass the
 * cores around unseen; what matters is when one with something to do gets
 * one, so only that is simulated: a rank waiting in the queue with bytes
 * to read, room to write or a wake takes a core from an idle rank (on it,
 * blocked in a wait) a poll later, or later by a poll for each round of
 * the cores the ranks ahead of it in the queue take first.  The idle rank
 * goes to the back of the queue. */
bool idle_on_core(int c)
{
    const int r = g_cpu.on[c];
    return r >= 0 && g_rank[r].blocked && !g_rank[r].scheduled && !g_rank[r].finished;
}

void handoff(int r)
{
    rank_state &k = g_rank[r];
    if (!k.runnable || k.oncpu) return;
    for (int c = 0; c < (int)g_cpu.on.size(); c++)
        if (idle_on_core(c)) return hand_over(c, r);
    /* no core idle now: the next rank to block offers its own (block) */
}

void want_core(int r)
{
    rank_state &k = g_rank[r];
    if (!g_opt.idle_yield || g_opt.host_cores <= 0 || !g_in_run || !k.runnable || k.oncpu) return;
    k.work = true;
    if (k.handoff.IsRunning()) return;
    bool idle = false;
    for (int c = 0; c < (int)g_cpu.on.size() && !idle; c++) idle = idle_on_core(c);
    if (!idle) return;
    const size_t ahead = (size_t)(std::find(g_cpu.queue.begin(), g_cpu.queue.end(), r) - g_cpu.queue.begin());
    k.handoff = Simulator::Schedule(Seconds(g_opt.yield_poll * (double)(1 + ahead / g_cpu.on.size())), &handoff, r);
}

void offer_cores()
{
    if (!g_opt.idle_yield) return;
    for (int q : g_cpu.queue)
        if (g_rank[q].work && !g_rank[q].handoff.IsRunning()) want_core(q);
}

void cpu_leave(int r)
{
    rank_state &k = g_rank[r];
    if (g_opt.host_cores <= 0 || !k.runnable) return;
    k.runnable = false;
    if (!k.oncpu) return dequeue(r);
    k.oncpu = false;
    for (int c = 0; c < (int)g_cpu.on.size(); c++)
        if (g_cpu.on[c] == r) {
            Simulator::Cancel(g_cpu.turn_end[c]);
            give_core(c);
            return;
        }
}

/* ---- the host's freezes ----
 * The emulated cluster's host is a VM whose vCPUs the hypervisor stops: a
 * spinner pinned to each of this machine's two vCPUs, both spinning, lost
 * 11.5-16.5 % of 5 s in gaps from 50 us to over 25 ms (steal 15.6 % of a
 * bench job's time; docs/results/2026-12-03-packet-deep-outs.md).  Each
 * core here runs for an exponentially distributed time, then freezes for a
 * gap drawn from those gaps' histogram (uniform in log within a bin), the
 * mean run sized so that the core is frozen host_freezes % of the time.  A
 * frozen core's rank stops until it thaws; so does the network processing
 * of its machines (g_freezes). */
struct gap_bin { double from_s; int count; };
/* the pooled histogram of both spinners (gap.py in the report's archive):
 * gaps of at least from_s, below twice it */
constexpr gap_bin FREEZE_GAPS[] = {{50e-6, 1892}, {100e-6, 737}, {200e-6, 507}, {400e-6, 304}, {800e-6, 155},
                                   {1.6e-3, 107},  {3.2e-3, 58},  {6.4e-3, 12},  {12.8e-3, 4},  {25.6e-3, 1}};

double freeze_uniform()
{
    return (lcg_next(g_cpu.freeze_rng) + 0.5) / LCG_RANGE;   /* in (0, 1): a log's argument */
}

double freeze_gap()
{
    int total = 0;
    for (const gap_bin &b : FREEZE_GAPS) total += b.count;
    double u = freeze_uniform() * total;
    for (const gap_bin &b : FREEZE_GAPS) {
        if (u < b.count) return b.from_s * std::exp2(freeze_uniform());
        u -= b.count;
    }
    return FREEZE_GAPS[0].from_s;
}

double freeze_mean_gap()
{
    double n = 0, sum = 0;
    for (const gap_bin &b : FREEZE_GAPS) n += b.count, sum += b.count * b.from_s / std::log(2.0);   /* log-uniform on [b, 2b): mean b / ln 2 */
    return sum / n;
}

/* a core's run between two freezes: exponential, its mean sized so the
 * core is frozen host_freezes % of the time */
double freeze_run()
{
    const double share = g_opt.host_freezes / 100;
    return -std::log(freeze_uniform()) * freeze_mean_gap() * (1 - share) / share;
}

void freeze(int c);

/* The host takes core c for its own work (a freeze, a softirq): the rank
 * on it stops where it is, off any core, until release_core(c). */
void hold_core(int c)
{
    if (c >= (int)g_cpu.on.size()) return;
    const int r = g_cpu.on[c];
    if (r == FROZEN) return;   /* held already: its release comes */
    g_cpu.held[c] = r;
    g_cpu.on[c] = FROZEN;
    if (r >= 0) {
        Simulator::Cancel(g_cpu.turn_end[c]);
        Simulator::Cancel(g_rank[r].handoff);
        g_rank[r].oncpu = false;
    }
}

/* The host gives core c back: its rank goes on, or the next waiting. */
void release_core(int c)
{
    if (c >= (int)g_cpu.on.size() || g_cpu.on[c] != FROZEN) return;
    const int r = g_cpu.held[c];
    g_cpu.held[c] = -1;
    g_cpu.on[c] = -1;
    if (r >= 0 && g_rank[r].runnable && !g_rank[r].oncpu && !g_rank[r].finished) {
        dequeue(r);
        take_core(c, r);
    } else {
        give_core(c);
    }
}

void thaw(int c)
{
    g_freezes.frozen[(size_t)c] = 0;
    std::vector<std::function<void()>> waiting;
    waiting.swap(g_freezes.waiting[(size_t)c]);
    for (auto &f : waiting) f();
    release_core(c);
    Simulator::Schedule(Seconds(freeze_run()), &freeze, c);
}

void freeze(int c)
{
    g_freezes.frozen[(size_t)c] = 1;
    g_freezes.count++;
    hold_core(c);
    Simulator::Schedule(Seconds(freeze_gap()), &thaw, c);
}

/* once a simulation, at its start: each core's first freeze after a run */
void start_freezes()
{
    if (g_opt.host_freezes <= 0 || g_opt.host_cores <= 0 || g_freezes.cores > 0) return;
    g_freezes.cores = g_opt.host_cores;
    g_freezes.frozen.assign((size_t)g_opt.host_cores, 0);
    g_freezes.waiting.assign((size_t)g_opt.host_cores, {});
    g_cpu.freeze_rng = g_opt.seed * 0xD1B54A32D192ED03ULL + 7;
    for (int c = 0; c < g_opt.host_cores; c++) Simulator::Schedule(Seconds(freeze_run()), &freeze, c);
}

/* ---- the host's network processing ----
 * On the emulated cluster a frame reaching its machine goes through the
 * veth, the machine's IP and TCP in a softirq on one of the host's cores,
 * ahead of the rank that was running there.  host_softirq (mpi_options)
 * is that work's cost a frame, data or ACK: the frame waits for the first
 * core free of earlier frames (the cores taking turns where several are
 * free), then holds it for the cost, its rank stopped, and only then
 * reaches its socket.  Frames the switches forward cost nothing of their
 * own here: the cost a frame taken in stands for its whole way. */
void softirq_done(int c)
{
    const Time now = Simulator::Now();
    if (g_softirqs.busy_until[(size_t)c] > now) {   /* more frames came meanwhile */
        Simulator::Schedule(g_softirqs.busy_until[(size_t)c] - now, &softirq_done, c);
        return;
    }
    release_core(c);
}

}  // namespace

void host_softirq(std::function<void()> then)
{
    const Time now = Simulator::Now();
    std::vector<Time> &busy = g_softirqs.busy_until;
    const size_t n = busy.size();
    size_t c = (size_t)(std::min_element(busy.begin(), busy.end()) - busy.begin());   /* the core free first */
    for (size_t k = 0; k < n; k++)   /* or, where several are free, the next in turn */
        if (busy[(g_softirqs.next + k) % n] <= now) {
            c = (g_softirqs.next + k) % n;
            break;
        }
    const bool idle = busy[c] <= now;
    busy[c] = std::max(busy[c], now) + Seconds(g_softirqs.cost);
    if (idle) {   /* the core stops its rank until its frames are done */
        g_softirqs.next = c + 1;
        hold_core((int)c);
        Simulator::Schedule(busy[c] - now, &softirq_done, (int)c);
    }
    g_softirqs.frames++;
    Simulator::Schedule(busy[c] - now, std::move(then));
}

namespace {

/* Both sockets of machines a and b: a's writes stream a->b and reads b->a. */
void on_cong_state(stream *s, const TcpSocketState::TcpCongState_t was, const TcpSocketState::TcpCongState_t now)
{
    if (now == TcpSocketState::CA_LOSS) g_stats.timeouts++;
    if (now == TcpSocketState::CA_LOSS && was == TcpSocketState::CA_RECOVERY) g_stats.recovery_timeouts++;
    if (now == TcpSocketState::CA_RECOVERY) {
        g_stats.recoveries++;
        s->recovering_since = Simulator::Now().GetSeconds();
    } else if (was == TcpSocketState::CA_RECOVERY && s->recovering_since >= 0) {
        g_stats.recovery_s += Simulator::Now().GetSeconds() - s->recovering_since;
        s->recovering_since = -1;
    }
}

void attach(int a, int b, Ptr<Socket> sock)
{
    stream &out = stream_of(a, b), &in = stream_of(b, a);
    sock->TraceConnectWithoutContext("CongState", MakeBoundCallback(&on_cong_state, &out));
    sock->SetCloseCallbacks(MakeCallback(+[](Ptr<Socket>) { fatal("a TCP connection was closed"); }),
                            MakeBoundCallback(+[](int a, int b, Ptr<Socket>) {
                                run_failed("TCP gave up on the connection of machines " + std::to_string(a) + " and " +
                                           std::to_string(b) + " (ranks) at " +
                                           std::to_string(Simulator::Now().GetSeconds()) + " s simulated: 15 "
                                           "retransmissions of a segment went unanswered (Linux's tcp_retries2), as "
                                           "a real job's connection would fail; at these settings the network drops "
                                           "nearly every packet (slow links, short switch ports: --buffer)");
                            }, a, b));
    out.wsock = sock;
    out.up = true;
    sock->SetRecvCallback(MakeBoundCallback(&on_recv, &in));
    sock->SetSendCallback(MakeBoundCallback(&on_space, &out));
    pump(out);
}

int machine_of_address(const Address &from)
{
    Ipv4Address a = InetSocketAddress::ConvertFrom(from).GetIpv4();
    for (int m = 0; m < g_machines; m++)
        if (g_net->machine_addr[m] == a) return m;
    return -1;
}

void connection_done()
{
    if (--g_pending_connects == 0) Simulator::Stop();
}

/* The pairs whose connection is open or opening (a * machines + b, a < b):
 * whether it opened at a first message during the run */
std::unordered_map<long long, bool> g_opened;

long long pair_key(int a, int b) { return a < b ? (long long)a * g_machines + b : (long long)b * g_machines + a; }

/* a connection's first bytes: its end's HELLO, ahead of what waits */
void hello_first(stream &s) { s.q.push_front(frag{HELLO, nullptr, 0, 0, header_bytes(HELLO)}); }

/* Machine a opens its connection to b: before the run (its HELLO tells b
 * of the connection even when the handshake's last ACK is lost: ns-3 does
 * not answer a repeated SYN-ACK), or at a first message during it (its
 * HELLO, the BTL's connect ack, goes ahead of what waits, and the data
 * waits for b's) */
void open_pair(int a, int b, bool in_run)
{
    g_opened[pair_key(a, b)] = in_run;
    Ptr<Socket> s = probing_tcp_socket(g_net->node_of_machine(a), g_opt.tcp);
    s->Bind();
    s->SetConnectCallback(MakeBoundCallback(+[](int a, int b, bool in_run, Ptr<Socket> s) {
                              stream &out = stream_of(a, b);
                              hello_first(out);
                              out.awaiting_hello = in_run;
                              attach(a, b, s);
                              if (!in_run) connection_done();
                          }, a, b, in_run),
                          MakeBoundCallback(+[](int a, int b, Ptr<Socket>) {
                              run_failed("TCP could not connect machines " + std::to_string(a) + " and " +
                                         std::to_string(b) + " (ranks): ns-3 gave up when its SYN "
                                         "and 6 retries (ConnCount; from 1 s, doubling) went unanswered");
                          }, a, b));
    s->Connect(InetSocketAddress(g_net->machine_addr[b], PORT));
}

void open_at_first_message(int a, int b)
{
    if (g_opt.connect == connect_mode::eager || g_opened.count(pair_key(a, b))) return;
    open_pair(a, b, true);
}

}  // namespace

/* ---- the world ---- */

void sim_world_init(tree_net *net, const mpi_options &o)
{
    g_net = net;
    g_opt = o;
    g_machines = (int)net->machine_addr.size();
    g_rank = std::vector<rank_state>(g_machines);
    start_freezes();
    g_softirqs.cost = o.host_cores > 0 ? o.host_softirq : 0;
    g_softirqs.busy_until.assign(g_softirqs.cost > 0 ? (size_t)o.host_cores : 0, Time(0));
}

size_t sim_connections_in_run()
{
    return (size_t)std::count_if(g_opened.begin(), g_opened.end(), [](const auto &e) { return e.second; });
}
size_t sim_connections_before_run() { return g_opened.size() - sim_connections_in_run(); }

double sim_connect(const std::vector<char> &need, int machines)
{
    double t0 = Simulator::Now().GetSeconds();
    std::vector<std::vector<int>> to(machines);
    g_opened.clear();
    for (int a = 0; a < machines; a++)
        for (int b = a + 1; b < machines; b++)
            if (need[(size_t)a * machines + b] &&
                (g_opt.connect == connect_mode::eager ||
                 (g_opt.connect == connect_mode::init && native_openmpi_allgather_pair(a, b, machines))))
                to[a].push_back(b);
    for (int b = 0; b < machines; b++) {
        Ptr<Socket> l = probing_tcp_socket(g_net->node_of_machine(b), g_opt.tcp);
        l->Bind(InetSocketAddress(Ipv4Address::GetAny(), PORT));
        l->Listen();
        l->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address &>(),
                             MakeBoundCallback(+[](int b, Ptr<Socket> s, const Address &from) {
                                 int a = machine_of_address(from);
                                 if (a < 0) fatal("a connection from an unknown address");
                                 const auto it = g_opened.find(pair_key(a, b));   /* a lookup, not an insert */
                                 const bool in_run = it != g_opened.end() && it->second;
                                 if (in_run) hello_first(stream_of(b, a));   /* its answer, in b's turn */
                                 attach(b, a, s);
                                 if (!in_run) connection_done();
                             }, b));
    }
    /* a machine opens its connections one at a time, 100 us apart for each
     * 32 machines: with every machine opening at once, 256 machines at 100 us
     * overflowed the leaves' uplinks with handshakes, SYNs were retried for 9
     * simulated seconds, and connections came up with a window of one
     * segment whose first message then waited 40 ms for a delayed ACK */
    const int64_t gap_us = 100 * (int64_t)((machines + 31) / 32);
    for (int a = 0; a < machines; a++)
        for (size_t k = 0; k < to[a].size(); k++) {
            g_pending_connects += 2;
            Simulator::Schedule(MicroSeconds(gap_us * (int64_t)k), &open_pair, a, to[a][k], false);
        }
    if (g_pending_connects) Simulator::Run();
    if (g_pending_connects) fatal("connections did not come up");
    return Simulator::Now().GetSeconds() - t0;
}

static void start_rank(int r, size_t stack_bytes)
{
    rank_state &k = g_rank[r];
    free(k.stack);
    k.stack = (char *)malloc(stack_bytes);
    if (!k.stack) fatal("no memory for a rank's stack");
    k.finished = false;
    prepare_stack(r, stack_bytes);
    if (g_opt.host_cores > 0) {   /* it starts when it first gets a core */
        k.blocked = true;
        k.wake_pending = true;
        k.runnable = false;
        k.oncpu = false;
        cpu_runnable(r);
        return;
    }
    k.scheduled = true;
    Simulator::ScheduleNow(&resume, r);
}

/* What every unfinished rank waits for, when the run is stuck. */
void report_stuck()
{
    int shown = 0;
    for (size_t r = 0; r < g_rank.size() && shown < 8; r++) {
        rank_state &k = g_rank[r];
        if (k.finished) continue;
        shown++;
        fprintf(stderr, "  rank %zu: %zu receives posted (first from %d), %zu unexpected messages\n", r,
                k.posted.size(), k.posted.empty() ? -1 : k.posted.front()->peer, k.unexpected.size());
    }
    size_t queued = 0, streams = 0;
    for (auto &e : g_streams)
        if (e.second->wpos < e.second->q.size()) { queued += e.second->q.size() - e.second->wpos; streams++; }
    fprintf(stderr, "  %zu fragments wait to be written on %zu connections\n", queued, streams);
}

void sim_run_ranks(const std::function<void(int)> &body, size_t stack_bytes)
{
    /* a watchdog: napping ranks keep the clock going, so a run in which no
     * request completes for a long simulated time is stuck, not slow */
    g_last_progress = Simulator::Now().GetSeconds();
    static std::function<void()> watch;
    watch = [] {
        if (Simulator::Now().GetSeconds() - g_last_progress > g_opt.stall_seconds) {
            fprintf(stderr, "topocoll-packet: error: no message completed in %.0f simulated seconds (at %.1f s); "
                    "the run is stuck:\n", g_opt.stall_seconds, Simulator::Now().GetSeconds());
            report_stuck();
            exit(3);
        }
        Simulator::Schedule(Seconds(10), +[] { watch(); });
    };
    Simulator::Schedule(Seconds(10), +[] { watch(); });
    g_body = &body;
    g_running = (int)g_rank.size();
    g_in_run = true;
    if (g_opt.host_cores > 0) {
        g_cpu.on.assign((size_t)g_opt.host_cores, -1);
        g_cpu.held.assign((size_t)g_opt.host_cores, -1);
        for (int c = 0; c < g_freezes.cores; c++)
            if (g_freezes.frozen[(size_t)c]) g_cpu.on[c] = FROZEN;
        for (size_t c = 0; c < g_softirqs.busy_until.size(); c++)   /* released when its frames are done */
            if (g_softirqs.busy_until[c] > Simulator::Now()) g_cpu.on[c] = FROZEN;
        g_cpu.turn_end.assign((size_t)g_opt.host_cores, EventId());
        g_cpu.queue.clear();
        g_cpu.rng = g_opt.seed * 0x9E3779B97F4A7C15ULL + 1;
    }
    for (size_t r = 0; r < g_rank.size(); r++) start_rank((int)r, stack_bytes);
    Simulator::Run();
    g_in_run = false;
    for (int c = 0; c < (int)g_cpu.on.size(); c++) Simulator::Cancel(g_cpu.turn_end[c]);
    for (auto &k : g_rank) {
        Simulator::Cancel(k.handoff);
        k.work = false;
    }
    for (auto &k : g_rank)
        if (!k.finished) fatal("the ranks stopped without finishing (a deadlock in the schedule?)");
}

void sim_barrier(double late)
{
    rank_state &me = g_rank[g_cur];
    me.progressing = true;   /* a barrier progresses, also while its release reaches this rank */
    progress(g_cur);
    if (++g_arrived == (int)g_rank.size()) {
        g_arrived = 0;
        for (size_t r = 0; r < g_rank.size(); r++)
            if (g_rank[r].in_barrier) {
                g_rank[r].in_barrier = false;
                wake((int)r);
            }
    } else {
        me.in_barrier = true;
        while (me.in_barrier) block();
    }
    if (late > 0 && g_opt.host_cores > 0 && g_opt.barrier_spins) {
        /* still in the barrier: spinning in its progress loop, wanting a
         * core and reading in its turns, until it leaves */
        const int r = g_cur;
        bool left = false;
        Simulator::Schedule(Seconds(late), +[](bool *left, int r) {
            *left = true;
            wake(r);
        }, &left, r);
        while (!left) block();
    } else if (late > 0) {
        sim_sleep(late);
    }
    me.progressing = false;
}

void sim_sleep(double seconds)
{
    int r = g_cur;
    /* whole nanoseconds (ns-3's clock), rounded up: a rank waiting for a
     * time less than one tick ahead would otherwise never reach it */
    int64_t ns = (int64_t)std::ceil(seconds * 1e9);
    if (g_opt.host_cores > 0) {   /* it sleeps off its core, and wakes wanting one */
        g_rank[r].blocked = true;
        cpu_leave(r);
    }
    Simulator::Schedule(NanoSeconds(ns > 0 ? ns : 1), +[](int r) {
        if (g_opt.host_cores <= 0) return resume(r);
        g_rank[r].wake_pending = true;
        cpu_runnable(r);
    }, r);
    switch_to_main(r);
}

extern "C" void sim_sleep_c(double seconds) { sim_sleep(seconds); }
extern "C" int sim_idle_wakes_c(void) { return g_opt.idle_wakes && g_opt.host_cores > 0; }

const sim_stats &sim_get_stats() { return g_stats; }
void sim_reset_stats() { g_stats = sim_stats(); }

/* ---- mpi.h ---- */

extern "C" {

int SIM_Comm_dup(MPI_Comm comm, MPI_Comm *out) { *out = comm; return MPI_SUCCESS; }
int SIM_Comm_free(MPI_Comm *comm) { *comm = MPI_COMM_NULL; return MPI_SUCCESS; }
int SIM_Comm_rank(MPI_Comm, int *rank) { *rank = g_cur; return MPI_SUCCESS; }
int SIM_Comm_size(MPI_Comm, int *size) { *size = (int)g_rank.size(); return MPI_SUCCESS; }
double SIM_Wtime(void) { return Simulator::Now().GetSeconds(); }
int SIM_Type_size(MPI_Datatype, int *size) { *size = 1; return MPI_SUCCESS; }
int SIM_Type_get_extent(MPI_Datatype, MPI_Aint *lb, MPI_Aint *ext) { *lb = 0; *ext = 1; return MPI_SUCCESS; }
int SIM_Type_get_true_extent(MPI_Datatype, MPI_Aint *lb, MPI_Aint *ext) { *lb = 0; *ext = 1; return MPI_SUCCESS; }

int SIM_Pack(const void *in, int count, MPI_Datatype, void *out, int size, int *pos, MPI_Comm)
{
    if (*pos + count > size) return MPI_ERR_TRUNCATE;
    memcpy((char *)out + *pos, in, (size_t)count);
    *pos += count;
    return MPI_SUCCESS;
}

int SIM_Unpack(const void *in, int size, int *pos, void *out, int count, MPI_Datatype, MPI_Comm)
{
    if (*pos + count > size) return MPI_ERR_TRUNCATE;
    memcpy(out, (const char *)in + *pos, (size_t)count);
    *pos += count;
    return MPI_SUCCESS;
}

int SIM_Isend(const void *buf, int count, MPI_Datatype, int dst, int tag, MPI_Comm, MPI_Request *req)
{
    const int me = g_cur;
    if (dst < 0 || dst >= (int)g_rank.size() || dst == me) return MPI_ERR_OTHER;
    sim_request *q = new sim_request{me, true, false, dst, tag, (char *)buf, count, 0};
    *req = q;
    message *m = new message{me, dst, tag, count, 0, q, nullptr, {}};
    if (g_opt.move_data) m->data.assign((const char *)buf, (const char *)buf + count);
    g_stats.messages++;
    if (count > 0 && g_opt.move_data && ++g_data_messages == g_opt.corrupt_message) m->data[0] ^= 0x5A;
    if (count <= g_opt.eager_limit - OB1_LARGEST_HDR) {
        m->first = count;
        enqueue(me, dst, frag{EAGER, m, 0, count, 0});
    } else {
        /* ob1's rendezvous: without data before a put, else the eager limit's worth */
        m->first = g_opt.rendezvous == rendezvous_kind::put ? 0 : g_opt.eager_limit - OB1_LARGEST_HDR;
        enqueue(me, dst, frag{RNDV, m, 0, m->first, 0});
    }
    return MPI_SUCCESS;
}

int SIM_Irecv(void *buf, int count, MPI_Datatype, int src, int tag, MPI_Comm, MPI_Request *req)
{
    const int me = g_cur;
    sim_request *q = new sim_request{me, false, false, src, tag, (char *)buf, count, 0};
    *req = q;
    auto &un = g_rank[me].unexpected;
    for (auto it = un.begin(); it != un.end(); ++it)
        if (matches(q, *it)) {
            message *m = *it;
            un.erase(it);
            matched(m, q);
            return MPI_SUCCESS;
        }
    g_rank[me].posted.push_back(q);
    return MPI_SUCCESS;
}

int SIM_Testall(int n, MPI_Request *req, int *flag, MPI_Status *)
{
    /* A napping rank tests the same array again and again (its 510
     * receives at 256 ranks, every 200 us): the scan resumes where the last
     * one stopped, since a completed request stays so until all are. */
    rank_state &k = g_rank[g_cur];
    progress(g_cur);
    int i = k.test_array == req && k.test_n == n ? k.test_from : 0;
    for (; i < n; i++)
        if (req[i] && !req[i]->done) {
            k.test_array = req;
            k.test_n = n;
            k.test_from = i;
            *flag = 0;
            return MPI_SUCCESS;
        }
    for (i = 0; i < n; i++) { delete req[i]; req[i] = MPI_REQUEST_NULL; }
    k.test_array = nullptr;
    *flag = 1;
    return MPI_SUCCESS;
}

int SIM_Waitall(int n, MPI_Request *req, MPI_Status *st)
{
    int flag;
    g_rank[g_cur].progressing = true;
    for (;;) {
        SIM_Testall(n, req, &flag, st);
        if (flag) break;
        block();
    }
    g_rank[g_cur].progressing = false;
    return MPI_SUCCESS;
}

int SIM_Iprobe(int src, int tag, MPI_Comm, int *flag, MPI_Status *)
{
    sim_request probe{g_cur, false, false, src, tag, nullptr, 0, 0};
    progress(g_cur);
    *flag = 0;
    for (message *m : g_rank[g_cur].unexpected)
        if (matches(&probe, m)) { *flag = 1; break; }
    return MPI_SUCCESS;
}

int SIM_Sendrecv(const void *sbuf, int scount, MPI_Datatype, int dst, int, void *rbuf, int rcount, MPI_Datatype,
                 int src, int, MPI_Comm, MPI_Status *)
{
    if (dst != g_cur || src != g_cur || scount != rcount) return MPI_ERR_OTHER;   /* the executor's self block only */
    if (g_opt.move_data) memmove(rbuf, sbuf, (size_t)scount);
    return MPI_SUCCESS;
}

}  // extern "C"
