/*
 * Test double of the ACL runtime for ge-rs tests. Not Huawei's library; nothing here runs on an NPU.
 *
 * Its sources build into one shared library which the ge-rs tests expose under the names
 * libascendcl.so, libnnopbase.so and libopapi.so (symlinks to one file, so all three dlopen()
 * handles share this state).  It implements, with CANN's C ABI:
 *   - the runtime subset ge-rs uses (init, devices, contexts, streams, memory, copies, stream
 *     capture into replayable graphs),
 *   - the nnopbase descriptors (aclTensor, aclScalar, aclIntArray),
 *   - a set of aclnn operators, computed for real on the host (in double precision), so results
 *     can be compared with a CPU backend.
 * "Device" memory is ordinary host memory.  Every call is counted and logged; illegal use
 * (use before init, double free, wrong copy kinds, dangling buffers, calls that are illegal
 * during stream capture, ...) is recorded as a "violation" and the call returns an error.
 * Extra exports (acl_test_double_*) give the tests fault injection and introspection.
 *
 * This file holds the shared state, the call log, counts, errors and violations, and those
 * extra exports; acl_double_internal.h lists the other sources and what each one does.
 *
 * Build: cc -std=c11 -shared -fPIC -O1 -Wall -Wextra -o libacl_test_double.so \
 *           acl_test_double.c acl_double_runtime.c acl_double_capture.c acl_double_tensor.c \
 *           acl_double_kernels.c acl_double_ops.c -lm -lpthread
 */
#include "acl_double_internal.h"

/* ------------------------------------------------------------------------------------------ */
/* Small utilities                                                                            */
/* ------------------------------------------------------------------------------------------ */

void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "acl_test_double: out of host memory\n");
        abort();
    }
    return q;
}

static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = xrealloc(NULL, n);
    memcpy(d, s, n);
    return d;
}

void ps_add(PtrSet *s, const void *p) {
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->v = xrealloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = p;
}

static long ps_find(const PtrSet *s, const void *p) {
    if (!p) return -1;
    for (size_t i = s->n; i-- > 0;)
        if (s->v[i] == p) return (long)i;
    return -1;
}

int ps_has(const PtrSet *s, const void *p) { return ps_find(s, p) >= 0; }

int ps_remove(PtrSet *s, const void *p) {
    long i = ps_find(s, p);
    if (i < 0) return 0;
    s->v[i] = s->v[--s->n];
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Global state (all behind g_mu)                                                             */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    char *name;
    int64_t n;
} CallCount;

typedef struct {
    char *fn;
    int code;
    char *msg;
} PendingFail;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
int g_initialized;
uint32_t g_device_count = 1;
static int64_t g_violations;

PtrSet g_streams, g_contexts, g_graphs, g_tensors, g_scalars, g_arrays, g_executors;

static char *g_log[LOG_MAX];
static size_t g_log_head, g_log_n;
static char *g_log_snapshot;

static CallCount *g_counts;
static size_t g_ncounts, g_counts_cap;

static PendingFail *g_fails;
static size_t g_nfails, g_fails_cap;

static _Thread_local char tl_err[2048];
static _Thread_local int tl_err_set;
static _Thread_local char tl_err_out[2048];

void lock_(void) { pthread_mutex_lock(&g_mu); }
void unlock_(void) { pthread_mutex_unlock(&g_mu); }

/* ------------------------------------------------------------------------------------------ */
/* Log, counts, errors, violations                                                            */
/* ------------------------------------------------------------------------------------------ */

static void log_add(char *line) {
    if (g_log_n == LOG_MAX) {
        free(g_log[g_log_head]);
        g_log[g_log_head] = line;
        g_log_head = (g_log_head + 1) % LOG_MAX;
    } else {
        g_log[(g_log_head + g_log_n) % LOG_MAX] = line;
        g_log_n++;
    }
}

__attribute__((format(printf, 1, 2))) static void log_printf(const char *fmt, ...) {
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    if (!s) {
        fprintf(stderr, "acl_test_double: out of host memory\n");
        abort();
    }
    log_add(s);
}

static void log_clear(void) {
    for (size_t i = 0; i < g_log_n; i++) free(g_log[(g_log_head + i) % LOG_MAX]);
    g_log_head = 0;
    g_log_n = 0;
}

void count_call(const char *fn) {
    for (size_t i = 0; i < g_ncounts; i++) {
        if (strcmp(g_counts[i].name, fn) == 0) {
            g_counts[i].n++;
            return;
        }
    }
    if (g_ncounts == g_counts_cap) {
        g_counts_cap = g_counts_cap ? g_counts_cap * 2 : 64;
        g_counts = xrealloc(g_counts, g_counts_cap * sizeof *g_counts);
    }
    g_counts[g_ncounts].name = xstrdup(fn);
    g_counts[g_ncounts].n = 1;
    g_ncounts++;
}

static void set_err_raw(const char *msg) {
    snprintf(tl_err, sizeof tl_err, "%s", msg);
    tl_err_set = 1;
}

/* Counts a violation and logs it as "VIOLATION: <msg>". */
static void record_violation(const char *msg) {
    g_violations++;
    log_printf("VIOLATION: %s", msg);
}

/* Records a violation without touching the error message (used where the call still succeeds). */
void violation_only(const char *fmt, ...) {
    char body[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    record_violation(body);
}

/* Sets the recent error message to "<fn>: <text>" (or just "<text>" when !prefix), optionally
 * records a violation with the same text, and returns code. */
int fail_msg(const char *fn, int code, int viol, int prefix, const char *fmt, ...) {
    char body[1536];
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    if (prefix)
        snprintf(msg, sizeof msg, "%.200s: %s", fn, body);
    else
        snprintf(msg, sizeof msg, "%s", body);
    set_err_raw(msg);
    if (viol) record_violation(msg);
    return code;
}

int take_injection(const char *fn, int *code) {
    for (size_t i = 0; i < g_nfails; i++) {
        if (strcmp(g_fails[i].fn, fn) == 0) {
            *code = g_fails[i].code;
            set_err_raw(g_fails[i].msg);
            free(g_fails[i].fn);
            free(g_fails[i].msg);
            memmove(&g_fails[i], &g_fails[i + 1], (g_nfails - i - 1) * sizeof *g_fails);
            g_nfails--;
            return 1;
        }
    }
    return 0;
}

void log_call(const char *fn, const char *tag, int rc) { log_printf("%s%s -> %d", fn, tag, rc); }

/* ------------------------------------------------------------------------------------------ */
/* The recent error message                                                                   */
/* ------------------------------------------------------------------------------------------ */

EXPORT const char *aclGetRecentErrMsg(void) {
    const char *ret = NULL;
    BEGIN("aclGetRecentErrMsg");
    if (tl_err_set) {
        memcpy(tl_err_out, tl_err, sizeof tl_err_out);
        tl_err_set = 0;
        tl_err[0] = 0;
        ret = tl_err_out;
    }
    FINISH();
    return rc_ ? NULL : ret;
}

/* ------------------------------------------------------------------------------------------ */
/* Fault injection and introspection (test-only exports; not counted, not logged)            */
/* ------------------------------------------------------------------------------------------ */

EXPORT void acl_test_double_reset(void) {
    lock_();
    log_clear();
    free(g_log_snapshot);
    g_log_snapshot = NULL;
    for (size_t i = 0; i < g_ncounts; i++) free(g_counts[i].name);
    g_ncounts = 0;
    for (size_t i = 0; i < g_nfails; i++) {
        free(g_fails[i].fn);
        free(g_fails[i].msg);
    }
    g_nfails = 0;
    g_violations = 0;
    g_device_count = 1;
    tl_err_set = 0;
    tl_err[0] = 0;
    unlock_();
}

EXPORT void acl_test_double_set_device_count(uint32_t n) {
    lock_();
    g_device_count = n;
    unlock_();
}

EXPORT void acl_test_double_fail_next(const char *fn, int code, const char *msg) {
    if (!fn) return;
    lock_();
    if (g_nfails == g_fails_cap) {
        g_fails_cap = g_fails_cap ? g_fails_cap * 2 : 8;
        g_fails = xrealloc(g_fails, g_fails_cap * sizeof *g_fails);
    }
    g_fails[g_nfails].fn = xstrdup(fn);
    g_fails[g_nfails].code = code;
    if (msg) {
        g_fails[g_nfails].msg = xstrdup(msg);
    } else {
        char buf[512];
        snprintf(buf, sizeof buf, "%.200s: injected failure %d (acl_test_double_fail_next)", fn, code);
        g_fails[g_nfails].msg = xstrdup(buf);
    }
    g_nfails++;
    unlock_();
}

EXPORT int64_t acl_test_double_calls(const char *fn) {
    int64_t n = 0;
    if (!fn) return 0;
    lock_();
    for (size_t i = 0; i < g_ncounts; i++)
        if (strcmp(g_counts[i].name, fn) == 0) n = g_counts[i].n;
    unlock_();
    return n;
}

EXPORT int64_t acl_test_double_live(const char *kind) {
    int64_t n = -1;
    if (!kind) return -1;
    lock_();
    if (!strcmp(kind, "device_buffers")) n = count_allocs(AK_DEVICE, -1);
    else if (!strcmp(kind, "host_buffers")) n = count_allocs(AK_HOST, -1);
    else if (!strcmp(kind, "streams")) n = (int64_t)g_streams.n;
    else if (!strcmp(kind, "contexts")) n = (int64_t)g_contexts.n;
    else if (!strcmp(kind, "graphs")) n = (int64_t)g_graphs.n;
    else if (!strcmp(kind, "tensors")) n = (int64_t)g_tensors.n;
    else if (!strcmp(kind, "scalars")) n = (int64_t)g_scalars.n;
    else if (!strcmp(kind, "int_arrays")) n = (int64_t)g_arrays.n;
    else if (!strcmp(kind, "executors")) n = (int64_t)g_executors.n;
    else if (!strcmp(kind, "devices")) n = devices_set_total();
    else if (!strcmp(kind, "initialized")) n = g_initialized ? 1 : 0;
    else if (!strcmp(kind, "capturing")) n = streams_capturing();
    unlock_();
    return n;
}

EXPORT int64_t acl_test_double_violations(void) {
    lock_();
    int64_t n = g_violations;
    unlock_();
    return n;
}

EXPORT const char *acl_test_double_log(void) {
    lock_();
    free(g_log_snapshot);
    size_t total = 1;
    for (size_t i = 0; i < g_log_n; i++) total += strlen(g_log[(g_log_head + i) % LOG_MAX]) + 1;
    g_log_snapshot = xrealloc(NULL, total);
    size_t pos = 0;
    for (size_t i = 0; i < g_log_n; i++) {
        const char *l = g_log[(g_log_head + i) % LOG_MAX];
        size_t len = strlen(l);
        memcpy(g_log_snapshot + pos, l, len);
        pos += len;
        g_log_snapshot[pos++] = '\n';
    }
    g_log_snapshot[pos] = 0;
    const char *r = g_log_snapshot;
    unlock_();
    return r;
}
