/*
 * ACL test double: stream capture.  The rules for what may be called while a stream captures
 * (capture_prohibits), the captured graphs, and the aclmdlRI* API that records and replays them.
 * See acl_double_internal.h.
 */
#include "acl_double_internal.h"

/* The calling thread's capture mode (aclmdlRICaptureThreadExchangeMode). */
static _Thread_local int tl_mode = ACL_MODEL_RI_CAPTURE_MODE_GLOBAL;

int64_t streams_capturing(void) {
    int64_t n = 0;
    for (size_t i = 0; i < g_streams.n; i++)
        if (((const Stream *)g_streams.v[i])->cap_state != CAP_NONE) n++;
    return n;
}

/* Whether the calling thread is currently prohibited from "unsafe" calls by an ongoing capture
 * (CUDA-style rules; with the default thread mode GLOBAL: any GLOBAL capture anywhere, or a
 * THREAD_LOCAL capture begun by this thread; RELAXED captures never prohibit).  With
 * invalidate != 0, the captures responsible are marked INVALIDATED. */
int capture_prohibits(int invalidate) {
    if (tl_mode == ACL_MODEL_RI_CAPTURE_MODE_RELAXED) return 0;
    int hit = 0;
    pthread_t self = pthread_self();
    for (size_t i = 0; i < g_streams.n; i++) {
        Stream *s = (Stream *)g_streams.v[i];
        if (s->cap_state == CAP_NONE || s->cap_mode == ACL_MODEL_RI_CAPTURE_MODE_RELAXED) continue;
        int own = pthread_equal(s->cap_thread, self);
        if (own || (s->cap_mode == ACL_MODEL_RI_CAPTURE_MODE_GLOBAL &&
                    tl_mode == ACL_MODEL_RI_CAPTURE_MODE_GLOBAL)) {
            hit = 1;
            if (invalidate) s->cap_state = CAP_INVALIDATED;
        }
    }
    return hit;
}

static void graph_free(Graph *g) {
    if (!g) return;
    for (size_t i = 0; i < g->n; i++)
        if (g->tasks[i].kind == TASK_OP) free_executor(g->tasks[i].ex);
    free(g->tasks);
    free(g);
}

void graph_push(Graph *g, const Task *t) {
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 16;
        g->tasks = xrealloc(g->tasks, g->cap * sizeof *g->tasks);
    }
    g->tasks[g->n++] = *t;
}

/* ------------------------------------------------------------------------------------------ */
/* Stream capture                                                                             */
/* ------------------------------------------------------------------------------------------ */

EXPORT_CAPTURE aclError aclmdlRICaptureBegin(aclrtStream stream, aclmdlRICaptureMode mode) {
    BEGIN("aclmdlRICaptureBegin");
    REQUIRE_INIT();
    if (!stream) FAIL(ACL_ERROR_INVALID_PARAM, "cannot capture the default (NULL) stream");
    if (!ps_has(&g_streams, stream)) VIOL(ACL_ERROR_INVALID_PARAM, "stream %p is not a live stream", stream);
    if ((int)mode < ACL_MODEL_RI_CAPTURE_MODE_GLOBAL || (int)mode > ACL_MODEL_RI_CAPTURE_MODE_RELAXED)
        FAIL(ACL_ERROR_INVALID_PARAM, "invalid capture mode %d", (int)mode);
    {
        Stream *s = (Stream *)stream;
        if (s->cap_state != CAP_NONE) VIOL(ACL_ERROR_RT_INTERNAL_ERROR, "stream %p is already capturing", stream);
        Graph *g = xrealloc(NULL, sizeof *g);
        memset(g, 0, sizeof *g);
        s->cap_state = CAP_ACTIVE;
        s->cap_mode = (int)mode;
        s->cap_thread = pthread_self();
        s->cap_graph = g;
    }
    FINISH();
    return rc_;
}

EXPORT_CAPTURE aclError aclmdlRICaptureGetInfo(aclrtStream stream, aclmdlRICaptureStatus *status, aclmdlRI *modelRI) {
    BEGIN("aclmdlRICaptureGetInfo");
    REQUIRE_INIT();
    if (!status) FAIL(ACL_ERROR_INVALID_PARAM, "status is NULL");
    if (!stream_known(stream)) VIOL(ACL_ERROR_INVALID_PARAM, "stream %p is not a live stream", stream);
    {
        Stream *s = (Stream *)stream;
        int st = s ? s->cap_state : CAP_NONE;
        *status = (aclmdlRICaptureStatus)st;
        if (modelRI) *modelRI = (st == CAP_ACTIVE) ? (aclmdlRI)s->cap_graph : NULL;
    }
    FINISH();
    return rc_;
}

EXPORT_CAPTURE aclError aclmdlRICaptureEnd(aclrtStream stream, aclmdlRI *modelRI) {
    BEGIN("aclmdlRICaptureEnd");
    REQUIRE_INIT();
    if (!modelRI) FAIL(ACL_ERROR_INVALID_PARAM, "modelRI is NULL");
    *modelRI = NULL;
    if (!stream_known(stream)) VIOL(ACL_ERROR_INVALID_PARAM, "stream %p is not a live stream", stream);
    {
        Stream *s = (Stream *)stream;
        if (!s || s->cap_state == CAP_NONE) FAIL(ACL_ERROR_RT_INTERNAL_ERROR, "stream %p is not capturing", stream);
        Graph *g = s->cap_graph;
        int st = s->cap_state;
        s->cap_state = CAP_NONE;
        s->cap_graph = NULL;
        if (st == CAP_INVALIDATED) {
            graph_free(g);
            FAIL(ACL_ERROR_RT_INTERNAL_ERROR,
                 "the capture on stream %p was invalidated by an illegal call during capture", stream);
        }
        ps_add(&g_graphs, g);
        *modelRI = g;
    }
    FINISH();
    return rc_;
}

EXPORT_CAPTURE aclError aclmdlRICaptureThreadExchangeMode(aclmdlRICaptureMode *mode) {
    BEGIN("aclmdlRICaptureThreadExchangeMode");
    REQUIRE_INIT();
    if (!mode) FAIL(ACL_ERROR_INVALID_PARAM, "mode is NULL");
    if ((int)*mode < ACL_MODEL_RI_CAPTURE_MODE_GLOBAL || (int)*mode > ACL_MODEL_RI_CAPTURE_MODE_RELAXED)
        FAIL(ACL_ERROR_INVALID_PARAM, "invalid capture mode %d", (int)*mode);
    {
        int old = tl_mode;
        tl_mode = (int)*mode;
        *mode = (aclmdlRICaptureMode)old;
    }
    FINISH();
    return rc_;
}

EXPORT_CAPTURE aclError aclmdlRIExecuteAsync(aclmdlRI modelRI, aclrtStream stream) {
    BEGIN("aclmdlRIExecuteAsync");
    REQUIRE_INIT();
    if (!ps_has(&g_graphs, modelRI)) VIOL(ACL_ERROR_INVALID_PARAM, "modelRI %p is not a live graph", modelRI);
    if (!stream_known(stream)) VIOL(ACL_ERROR_INVALID_PARAM, "stream %p is not a live stream", stream);
    if (stream && ((Stream *)stream)->cap_state != CAP_NONE)
        FAIL(ACL_ERROR_RT_INTERNAL_ERROR,
             "launching a graph into a capturing stream is not supported by the test double");
    {
        Graph *g = (Graph *)modelRI;
        for (size_t i = 0; i < g->n; i++) {
            Task *t = &g->tasks[i];
            if (t->kind == TASK_COPY) {
                int k = t->copy_kind;
                uintptr_t d = (uintptr_t)t->dst, s = (uintptr_t)t->src;
                if (t->count == 0) continue;
                if (!range_in_alloc(d, d + t->count, kind_dst_is_dev(k) ? AK_DEVICE : AK_HOST))
                    VIOL(ACL_ERROR_RT_INTERNAL_ERROR,
                         "task %zu (aclrtMemcpyAsync %s, %zu bytes): destination %p is no longer a live %s "
                         "allocation", i, kind_name(k), t->count, t->dst,
                         kind_dst_is_dev(k) ? "device" : "pinned host");
                if (!range_in_alloc(s, s + t->count, kind_src_is_dev(k) ? AK_DEVICE : AK_HOST))
                    VIOL(ACL_ERROR_RT_INTERNAL_ERROR,
                         "task %zu (aclrtMemcpyAsync %s, %zu bytes): source %p is no longer a live %s "
                         "allocation", i, kind_name(k), t->count, t->src,
                         kind_src_is_dev(k) ? "device" : "pinned host");
                memmove(t->dst, t->src, t->count);
            } else {
                char why[1024];
                if (exec_mem_check(t->ex, t->ws, t->ws_size, why, sizeof why))
                    VIOL(ACL_ERROR_RT_INTERNAL_ERROR, "task %zu (%s): %s", i, op_launch_names[t->ex->op], why);
                run_exec(t->ex);
            }
        }
    }
    FINISH();
    return rc_;
}

EXPORT_CAPTURE aclError aclmdlRIDestroy(aclmdlRI modelRI) {
    BEGIN("aclmdlRIDestroy");
    REQUIRE_INIT();
    if (!ps_remove(&g_graphs, modelRI)) VIOL(ACL_ERROR_INVALID_PARAM, "modelRI %p is not a live graph", modelRI);
    graph_free((Graph *)modelRI);
    FINISH();
    return rc_;
}
