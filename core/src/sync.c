/* Pairwise synchronisation analysis (see topocoll.h).  MPI-free. */
#include "tc_internal.h"

#include <stdlib.h>
#include <string.h>

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_sync(const void *a, const void *b)
{
    const tc_sync *x = a, *y = b;
    if (x->after != y->after) return (x->after > y->after) - (x->after < y->after);
    return (x->before > y->before) - (x->before < y->before);
}

static int cmp_i64_desc(const void *a, const void *b) { return cmp_i64(b, a); }

/* A refcounted copy of a rank's clock: clock[r] = the last step of rank r
 * known to have completed (-1: none). */
typedef struct snapshot { int64_t refs, slot; int owner; int32_t clock[]; } snapshot;

tc_status tc_schedule_add_syncs(tc_schedule *s, const tc_topology *topo, int depth, tc_sync_stats *stats)
{
    tc_status rc = TC_OK;
    const int p = s->num_ranks, E = 2 * tc_topology_num_links(topo), h = tc_topology_height(topo);
    const int64_t n = s->num_ops;
    int64_t *edge_begin = NULL, *edge_ops = NULL, *pairs2 = NULL, *cand = NULL, *cand_begin = NULL;
    int32_t *step_of = NULL, *path = NULL, *clock = NULL, *out_count = NULL;
    int *cap = NULL;
    int32_t *at_step = NULL, **saved = NULL;
    snapshot **snap = NULL, **last_snap = NULL, **all_snaps = NULL;
    int64_t nsnaps = 0;
    tc_sync *kept = NULL;
    int64_t nkept = 0, npairs2 = 0, ncand = 0, *lane_before = NULL;
    tc_lanes lanes = {0};
    memset(stats, 0, sizeof *stats);

    if (depth < 1) TC_FAIL(TC_ERR_ARG, "syncs: depth %d; at least 1 (one message a link at a time)", depth);
    if (p != tc_topology_num_machines(topo))
        TC_FAIL(TC_ERR_ARG, "syncs: the schedule has %d ranks but the topology %d machines", p, tc_topology_num_machines(topo));
    for (int64_t i = 0; i < n; i++)
        if (s->ops[i].first_block >= 0)
            TC_FAIL(TC_ERR_UNSUPPORTED, "syncs: '%s' forwards blocks; syncs are for direct phase schedules", s->algorithm);

    edge_begin = tc_xcalloc((size_t)E + 2, sizeof(int64_t));
    cap = tc_schedule_edge_capacities(s, topo);
    step_of = tc_xmalloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    path = tc_xmalloc(sizeof(int32_t) * (size_t)(2 * h + 2));
    if (!edge_begin || !step_of || !path || !cap) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "syncs: out of memory");
    for (int st = 0; st < s->num_steps; st++)
        for (int64_t i = s->step_begin[st]; i < s->step_begin[st + 1]; i++) step_of[i] = st;

    /* 1. the users of each directed edge, in step order (counting sort) */
    int64_t total_len = 0;
    for (int64_t i = 0; i < n; i++) {
        int L = tc_topology_path(topo, s->ops[i].src, s->ops[i].dst, path);
        for (int k = 0; k < L; k++) edge_begin[path[k] + 2]++;
        total_len += L;
        npairs2 += L > 1 ? L - 1 : 0;
    }
    for (int e = 2; e <= E + 1; e++) edge_begin[e] += edge_begin[e - 1];
    edge_ops = tc_xmalloc(sizeof(int64_t) * (size_t)(total_len ? total_len : 1));
    pairs2 = tc_xmalloc(sizeof(int64_t) * (size_t)(npairs2 ? npairs2 : 1));
    if (!edge_ops || !pairs2) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "syncs: out of memory for %lld path entries", (long long)total_len);
    npairs2 = 0;
    for (int64_t i = 0; i < n; i++) {
        int L = tc_topology_path(topo, s->ops[i].src, s->ops[i].dst, path);
        for (int k = 0; k < L; k++) edge_ops[edge_begin[path[k] + 1]++] = i;
        for (int k = 0; k + 1 < L; k++) pairs2[npairs2++] = (int64_t)path[k] * E + path[k + 1];
    }

    /* 2. distinct pairs sharing a link: two paths of a tree share one
     * contiguous run of directed edges, so subtract, for each run of L
     * shared edges, its L-1 shared consecutive edge pairs. */
    for (int e = 0; e < E; e++) {
        int64_t c = edge_begin[e + 1] - edge_begin[e];
        stats->sharing_pairs += c * (c - 1) / 2;
    }
    qsort(pairs2, (size_t)npairs2, sizeof(int64_t), cmp_i64);
    for (int64_t i = 0; i < npairs2;) {
        int64_t j = i;
        while (j < npairs2 && pairs2[j] == pairs2[i]) j++;
        stats->sharing_pairs -= (j - i) * (j - i - 1) / 2;
        i = j;
    }
    free(pairs2);
    pairs2 = NULL;

    /* 3. candidates: each user's lane predecessor `depth` back (lanes.c:
     * a link of capacity c is c lanes where the plan keeps links to their
     * capacities, else one, its users in step order), from another sender
     * and step, bucketed by the later operation; distinct within a bucket */
    lane_before = tc_xmalloc(sizeof(int64_t) * (size_t)(total_len ? total_len : 1));
    if (!lane_before) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "syncs: out of memory");
    TC_TRY(rc, out, tc_lanes_init(&lanes, p));
    for (int e = 0; e < E; e++)
        if (!tc_topology_link_is_local(topo, e / 2))   /* no network to keep apart */
            TC_TRY(rc, out, tc_lanes_assign(&lanes, s, edge_ops + edge_begin[e], edge_begin[e + 1] - edge_begin[e],
                                            step_of, cap[e], lane_before + edge_begin[e]));
    cand_begin = tc_xcalloc((size_t)n + 2, sizeof(int64_t));
    if (!cand_begin) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "syncs: out of memory");
    for (int pass = 0; pass < 2; pass++) {
        for (int e = 0; e < E; e++) {
            if (tc_topology_link_is_local(topo, e / 2)) continue;
            const int64_t *users = edge_ops + edge_begin[e], *before = lane_before + edge_begin[e];
            for (int64_t k = 0; k < edge_begin[e + 1] - edge_begin[e]; k++) {
                const int64_t w = tc_lanes_back(before, k, depth);
                if (w < 0) continue;
                int64_t x = users[w], y = users[k];
                if (s->ops[x].src == s->ops[y].src || step_of[x] == step_of[y]) continue;
                if (pass == 0) cand_begin[y + 2]++;
                else cand[cand_begin[y + 1]++] = x;
            }
        }
        if (pass == 0) {
            for (int64_t i = 2; i <= n + 1; i++) cand_begin[i] += cand_begin[i - 1];
            ncand = cand_begin[n + 1];
            cand = tc_xmalloc(sizeof(int64_t) * (size_t)(ncand ? ncand : 1));
            if (!cand) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "syncs: out of memory");
        }
    }
    free(edge_ops);
    edge_ops = NULL;
    free(lane_before);
    lane_before = NULL;
    tc_lanes_free(&lanes);
    out_count = tc_xcalloc((size_t)(n ? n : 1), sizeof(int32_t));
    if (!out_count) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "syncs: out of memory");
    for (int64_t y = 0; y < n; y++) {
        int64_t *b = cand + cand_begin[y], m = cand_begin[y + 1] - cand_begin[y], w = 0;
        /* latest first: the most recent message of a sender tells the most */
        qsort(b, (size_t)m, sizeof(int64_t), cmp_i64_desc);
        for (int64_t k = 0; k < m; k++)
            if (w == 0 || b[w - 1] != b[k]) b[w++] = b[k];
        for (int64_t k = w; k < m; k++) b[k] = -1;
        for (int64_t k = 0; k < w; k++) out_count[b[k]]++;
        stats->candidates += w;
    }

    /* 4. vector clocks, in step order */
    clock = tc_xmalloc(sizeof(int32_t) * (size_t)p * (size_t)p);
    snap = tc_xcalloc((size_t)(n ? n : 1), sizeof(snapshot *));
    last_snap = tc_xcalloc((size_t)p, sizeof(snapshot *));
    all_snaps = tc_xcalloc((size_t)(n ? n : 1), sizeof(snapshot *));
    kept = tc_xmalloc(sizeof(tc_sync) * (size_t)(stats->candidates ? stats->candidates : 1));
    if (!clock || !snap || !last_snap || !all_snaps || !kept) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "syncs: out of memory for %d clocks", p);
    memset(clock, 0xff, sizeof(int32_t) * (size_t)p * (size_t)p);
    /* A rank sending several messages in one step (links of capacity > 1):
     * a send waits for its own syncs only, not for those of the step's other
     * sends, so each judges by the rank's clock as the step began (saved). */
    at_step = tc_xmalloc(sizeof(int32_t) * (size_t)p);
    saved = tc_xcalloc((size_t)p, sizeof(int32_t *));
    if (!at_step || !saved) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "syncs: out of memory");
    for (int r = 0; r < p; r++) at_step[r] = -1;
    for (int64_t y = 0; y < n; y++) {
        int c = s->ops[y].src;
        int32_t *cc = clock + (size_t)c * p;
        if (y == 0 || step_of[y] != step_of[y - 1]) {   /* a new step: save the clocks of its multi-senders */
            int st = step_of[y];
            for (int64_t i = s->step_begin[st]; i < s->step_begin[st + 1]; i++) {
                int r = s->ops[i].src;
                if (at_step[r] == -2 - st) {   /* second send this step */
                    if (!saved[r] && !(saved[r] = tc_xmalloc(sizeof(int32_t) * (size_t)p)))
                        TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "syncs: out of memory");
                    memcpy(saved[r], clock + (size_t)r * p, sizeof(int32_t) * (size_t)p);
                    at_step[r] = st;
                } else if (at_step[r] != st)
                    at_step[r] = -2 - st;
            }
        }
        const int32_t *known = at_step[c] == step_of[y] ? saved[c] : cc;
        bool changed = false;
        for (int64_t k = cand_begin[y]; k < cand_begin[y + 1] && cand[k] >= 0; k++) {
            int64_t x = cand[k];
            snapshot *sx = snap[x];
            if (known[s->ops[x].src] < step_of[x]) {        /* not known yet: keep */
                kept[nkept++] = (tc_sync){x, y};
                for (int r = 0; r < p; r++)
                    if (sx->clock[r] > cc[r]) cc[r] = sx->clock[r];
                changed = true;
            }
            if (--sx->refs == 0) {
                if (last_snap[sx->owner] == sx) last_snap[sx->owner] = NULL;
                all_snaps[sx->slot] = NULL;
                free(sx);
            }
        }
        if (cc[c] < step_of[y]) { cc[c] = step_of[y]; changed = true; }
        if (out_count[y] == 0) continue;
        /* share the rank's last snapshot while its clock has not changed */
        if (changed || !last_snap[c]) {
            snapshot *sn = malloc(sizeof(snapshot) + sizeof(int32_t) * (size_t)p);
            if (!sn) TC_FAIL_GOTO(rc, out, TC_ERR_NOMEM, "syncs: out of memory");
            memcpy(sn->clock, cc, sizeof(int32_t) * (size_t)p);
            sn->refs = 0;
            sn->owner = c;
            sn->slot = nsnaps;
            all_snaps[nsnaps++] = sn;
            last_snap[c] = sn;
        }
        snap[y] = last_snap[c];
        snap[y]->refs += out_count[y];
    }
    stats->kept = nkept;
    /* the sender's order: by `after`, then `before` */
    qsort(kept, (size_t)nkept, sizeof(tc_sync), cmp_sync);
    TC_TRY(rc, out, tc_schedule_set_syncs(s, kept, nkept));
out:
    for (int64_t i = 0; i < nsnaps; i++) free(all_snaps[i]);
    free(all_snaps);
    free(edge_begin); free(edge_ops); free(pairs2); free(cand); free(cand_begin); free(lane_before);
    tc_lanes_free(&lanes);
    free(step_of); free(path); free(clock); free(cap);
    for (int r = 0; saved && r < p; r++) free(saved[r]);
    free(saved); free(at_step); free(out_count); free(snap); free(last_snap); free(kept);
    return rc;
}
