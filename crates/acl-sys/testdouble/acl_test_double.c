/*
 * Test double of the ACL runtime for ge-rs tests. Not Huawei's library; nothing here runs on an NPU.
 *
 * This file builds into one shared library which the ge-rs tests expose under the names
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
 * Build: cc -std=c11 -shared -fPIC -O1 -Wall -Wextra -o libacl_test_double.so \
 *           acl_test_double.c -lm -lpthread
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
/* -DACL_TEST_DOUBLE_NO_CAPTURE leaves the aclmdlRI* functions out of the exports, like a CANN
 * older than 8.2 (the tests check that capture is then off and eager launches still work). */
#ifdef ACL_TEST_DOUBLE_NO_CAPTURE
#define EXPORT_CAPTURE static __attribute__((unused))
#else
#define EXPORT_CAPTURE EXPORT
#endif

/* The CANN ABI types, enum values and error codes. */
#include "acl_abi.h"

#define MAXD 16                          /* maximum tensor rank accepted */
#define MAX_ELEMS (((int64_t)1) << 46)   /* sanity bound on element counts / extents */
#define LOG_MAX 100000                   /* call-log lines kept */
#define WORKSPACE_BYTES 256              /* workspace reported by Matmul and the reductions */
#define DEV_ALIGN 64

/* ------------------------------------------------------------------------------------------ */
/* Small utilities                                                                            */
/* ------------------------------------------------------------------------------------------ */

static void *xrealloc(void *p, size_t n) {
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

/* A set of live object pointers (linear; live counts in tests are small). */
typedef struct {
    const void **v;
    size_t n, cap;
} PtrSet;

static void ps_add(PtrSet *s, const void *p) {
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

static int ps_has(const PtrSet *s, const void *p) { return ps_find(s, p) >= 0; }

static int ps_remove(PtrSet *s, const void *p) {
    long i = ps_find(s, p);
    if (i < 0) return 0;
    s->v[i] = s->v[--s->n];
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Global state (all behind g_mu)                                                             */
/* ------------------------------------------------------------------------------------------ */

enum { AK_DEVICE = 1, AK_HOST = 2 };

typedef struct {
    uintptr_t base;
    size_t size;
    int kind;
    int32_t device;
} Alloc;

typedef struct {
    int32_t device;
} Context;

enum { CAP_NONE = 0, CAP_ACTIVE = 1, CAP_INVALIDATED = 2 };

typedef struct Graph Graph;

typedef struct {
    int cap_state;
    int cap_mode;
    pthread_t cap_thread;
    Graph *cap_graph;
} Stream;

enum { TASK_OP = 1, TASK_COPY = 2 };

typedef struct {
    int kind;
    /* TASK_OP */
    aclOpExecutor *ex;
    void *ws;
    uint64_t ws_size;
    /* TASK_COPY */
    void *dst;
    const void *src;
    size_t count;
    int copy_kind;
} Task;

struct Graph {
    Task *tasks;
    size_t n, cap;
};

typedef struct {
    int dtype;
    int ndim;
    int64_t dims[MAXD];
    int64_t strides[MAXD];
    int64_t offset;
    char *data;
} TD;

struct aclTensor {
    TD td;
};

struct aclScalar {
    int dtype;
    double v;
    unsigned char raw[8];
};

struct aclIntArray {
    uint64_t n;
    int64_t *v;
};

enum {
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MATMUL, OP_RELU, OP_EXP, OP_SIGMOID, OP_TANH, OP_SQRT,
    OP_NEG, OP_ABS, OP_SOFTMAX, OP_CAST, OP_PERMUTE, OP_REDUCESUM, OP_MEAN, OP_AMAX, OP_AMIN,
    OP_COUNT
};

static const char *const op_launch_names[OP_COUNT] = {
    "aclnnAdd", "aclnnSub", "aclnnMul", "aclnnDiv", "aclnnMatmul", "aclnnRelu", "aclnnExp",
    "aclnnSigmoid", "aclnnTanh", "aclnnSqrt", "aclnnNeg", "aclnnAbs", "aclnnSoftmax", "aclnnCast",
    "aclnnPermute", "aclnnReduceSum", "aclnnMean", "aclnnAmax", "aclnnAmin"};

struct aclOpExecutor {
    int op;
    int ntd;      /* inputs first, output last */
    TD td[3];
    double alpha;
    int64_t dim;  /* softmax (normalised) */
    int dtype;    /* cast target */
    bool keep;
    uint8_t red[MAXD]; /* reductions: 1 = reduced dim */
    int perm[MAXD];
    int nbatch;   /* matmul */
    int64_t batch[MAXD];
    int64_t mm_n, mm_k, mm_m;
    uint64_t ws;
};

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
static int g_initialized;
static uint32_t g_device_count = 1;
static int64_t *g_dev_refs;
static size_t g_dev_refs_n;
static int64_t g_violations;

static Alloc *g_allocs;
static size_t g_nallocs, g_allocs_cap;

static PtrSet g_streams, g_contexts, g_graphs, g_tensors, g_scalars, g_arrays, g_executors;

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
static _Thread_local int tl_mode = ACL_MODEL_RI_CAPTURE_MODE_GLOBAL;
static _Thread_local int32_t tl_device = -1;

static void lock_(void) { pthread_mutex_lock(&g_mu); }
static void unlock_(void) { pthread_mutex_unlock(&g_mu); }

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

static void count_call(const char *fn) {
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

/* Records a violation without touching the error message (used where the call still succeeds). */
__attribute__((format(printf, 1, 2))) static void violation_only(const char *fmt, ...) {
    char body[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    g_violations++;
    log_printf("VIOLATION: %s", body);
}

/* Sets the recent error message to "<fn>: <text>" (or just "<text>" when !prefix), optionally
 * records a violation with the same text, and returns code. */
static int vfail(const char *fn, int code, int viol, int prefix, const char *fmt, va_list ap) {
    char body[1536];
    char msg[2048];
    vsnprintf(body, sizeof body, fmt, ap);
    if (prefix)
        snprintf(msg, sizeof msg, "%.200s: %s", fn, body);
    else
        snprintf(msg, sizeof msg, "%s", body);
    set_err_raw(msg);
    if (viol) {
        g_violations++;
        log_printf("VIOLATION: %s", msg);
    }
    return code;
}

__attribute__((format(printf, 4, 5))) static int fail_(const char *fn, int code, int viol,
                                                        const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = vfail(fn, code, viol, 1, fmt, ap);
    va_end(ap);
    return r;
}

__attribute__((format(printf, 4, 5))) static int fail_raw(const char *fn, int code, int viol,
                                                           const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = vfail(fn, code, viol, 0, fmt, ap);
    va_end(ap);
    return r;
}

static int take_injection(const char *fn, int *code) {
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

static void log_call(const char *fn, const char *tag, int rc) { log_printf("%s%s -> %d", fn, tag, rc); }

/* Call framing.  Every exported ACL function body runs between BEGIN and FINISH with the global
 * mutex held.  FAIL/VIOL set the message (and a violation) and jump to the end. */
#define BEGIN(name)                                                                    \
    const char *FN = (name);                                                           \
    int rc_ = 0;                                                                       \
    const char *tag_ = "";                                                             \
    lock_();                                                                           \
    count_call(FN);                                                                    \
    if (take_injection(FN, &rc_)) {                                                    \
        tag_ = " [injected]";                                                          \
        goto done_;                                                                    \
    }

#define FINISH()                 \
    done_:                       \
    log_call(FN, tag_, rc_);     \
    unlock_()

#define FAIL(code, ...)                               \
    do {                                              \
        rc_ = fail_(FN, (code), 0, __VA_ARGS__);      \
        goto done_;                                   \
    } while (0)

#define VIOL(code, ...)                               \
    do {                                              \
        rc_ = fail_(FN, (code), 1, __VA_ARGS__);      \
        goto done_;                                   \
    } while (0)

#define TRY(expr)                  \
    do {                           \
        int e_ = (expr);           \
        if (e_) {                  \
            rc_ = e_;              \
            goto done_;            \
        }                          \
    } while (0)

#define REQUIRE_INIT()                                                                         \
    do {                                                                                       \
        if (!g_initialized)                                                                    \
            VIOL(ACL_ERROR_UNINITIALIZE, "called before aclInit (or after aclFinalize)");      \
    } while (0)

/* ------------------------------------------------------------------------------------------ */
/* Devices, allocations, streams                                                              */
/* ------------------------------------------------------------------------------------------ */

static int64_t devices_set_total(void) {
    int64_t t = 0;
    for (size_t i = 0; i < g_dev_refs_n; i++) t += g_dev_refs[i];
    return t;
}

static int32_t current_device(void) {
    if (tl_device >= 0 && (size_t)tl_device < g_dev_refs_n && g_dev_refs[tl_device] > 0) return tl_device;
    for (size_t i = 0; i < g_dev_refs_n; i++)
        if (g_dev_refs[i] > 0) return (int32_t)i;
    return -1;
}

#define REQUIRE_DEVICE()                                                                       \
    do {                                                                                       \
        if (devices_set_total() <= 0)                                                          \
            VIOL(ACL_ERROR_RT_CONTEXT_NULL, "no device is set (call aclrtSetDevice first)");   \
    } while (0)

static void alloc_add(void *p, size_t size, int kind) {
    if (g_nallocs == g_allocs_cap) {
        g_allocs_cap = g_allocs_cap ? g_allocs_cap * 2 : 64;
        g_allocs = xrealloc(g_allocs, g_allocs_cap * sizeof *g_allocs);
    }
    g_allocs[g_nallocs].base = (uintptr_t)p;
    g_allocs[g_nallocs].size = size;
    g_allocs[g_nallocs].kind = kind;
    g_allocs[g_nallocs].device = kind == AK_DEVICE ? current_device() : -1;
    g_nallocs++;
}

/* Index of the live allocation of `kind` containing address p, or -1. */
static long alloc_containing(uintptr_t p, int kind) {
    for (size_t i = g_nallocs; i-- > 0;) {
        const Alloc *a = &g_allocs[i];
        if (a->kind == kind && p >= a->base && p - a->base < a->size) return (long)i;
    }
    return -1;
}

/* 1 when [lo, hi) lies inside one live allocation of `kind`. */
static int range_in_alloc(uintptr_t lo, uintptr_t hi, int kind) {
    long i = alloc_containing(lo, kind);
    if (i < 0) return 0;
    return hi >= lo && hi - g_allocs[i].base <= g_allocs[i].size;
}

static int64_t count_allocs(int kind, int32_t device) {
    int64_t n = 0;
    for (size_t i = 0; i < g_nallocs; i++)
        if (g_allocs[i].kind == kind && (device < 0 || g_allocs[i].device == device)) n++;
    return n;
}

static void *dev_alloc_mem(size_t size) {
    size_t rounded = (size + DEV_ALIGN - 1) / DEV_ALIGN * DEV_ALIGN;
    void *p = aligned_alloc(DEV_ALIGN, rounded);
    if (p) memset(p, 0, rounded);
    return p;
}

static int stream_known(aclrtStream s) { return s == NULL || ps_has(&g_streams, s); }

static int64_t streams_capturing(void) {
    int64_t n = 0;
    for (size_t i = 0; i < g_streams.n; i++)
        if (((const Stream *)g_streams.v[i])->cap_state != CAP_NONE) n++;
    return n;
}

/* Whether the calling thread is currently prohibited from "unsafe" calls by an ongoing capture
 * (CUDA-style rules; with the default thread mode GLOBAL: any GLOBAL capture anywhere, or a
 * THREAD_LOCAL capture begun by this thread; RELAXED captures never prohibit).  With
 * invalidate != 0, the captures responsible are marked INVALIDATED. */
static int capture_prohibits(int invalidate) {
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

#define CHECK_CAPTURE()                                                                        \
    do {                                                                                       \
        if (capture_prohibits(1)) {                                                            \
            rc_ = fail_raw(FN, ACL_ERROR_RT_INTERNAL_ERROR, 1,                                 \
                           "%s is not allowed while stream capture is active", FN);            \
            goto done_;                                                                        \
        }                                                                                      \
    } while (0)

static void free_executor(aclOpExecutor *ex) { free(ex); }

static void graph_free(Graph *g) {
    if (!g) return;
    for (size_t i = 0; i < g->n; i++)
        if (g->tasks[i].kind == TASK_OP) free_executor(g->tasks[i].ex);
    free(g->tasks);
    free(g);
}

static void graph_push(Graph *g, const Task *t) {
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 16;
        g->tasks = xrealloc(g->tasks, g->cap * sizeof *g->tasks);
    }
    g->tasks[g->n++] = *t;
}

static const char *kind_name(int kind) {
    switch (kind) {
    case ACL_MEMCPY_HOST_TO_HOST: return "ACL_MEMCPY_HOST_TO_HOST";
    case ACL_MEMCPY_HOST_TO_DEVICE: return "ACL_MEMCPY_HOST_TO_DEVICE";
    case ACL_MEMCPY_DEVICE_TO_HOST: return "ACL_MEMCPY_DEVICE_TO_HOST";
    case ACL_MEMCPY_DEVICE_TO_DEVICE: return "ACL_MEMCPY_DEVICE_TO_DEVICE";
    default: return "invalid kind";
    }
}

static int kind_dst_is_dev(int kind) {
    return kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
}
static int kind_src_is_dev(int kind) {
    return kind == ACL_MEMCPY_DEVICE_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
}

/* Checks a copy's kind against where its pointers live, and bounds.  0 or an error (violation
 * recorded). */
static int check_copy(const char *FN, void *dst, size_t destMax, const void *src, size_t count, int kind) {
    if (kind < ACL_MEMCPY_HOST_TO_HOST || kind > ACL_MEMCPY_DEVICE_TO_DEVICE)
        return fail_(FN, ACL_ERROR_INVALID_PARAM, 1, "invalid memcpy kind %d", kind);
    if (count > destMax)
        return fail_(FN, ACL_ERROR_INVALID_PARAM, 1, "count %zu exceeds destMax %zu", count, destMax);
    if (count == 0) return 0;
    if (!dst || !src)
        return fail_(FN, ACL_ERROR_INVALID_PARAM, 1, "%s pointer is NULL", dst ? "src" : "dst");
    uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
    int d_dev = alloc_containing(d, AK_DEVICE) >= 0;
    int s_dev = alloc_containing(s, AK_DEVICE) >= 0;
    if (d_dev != kind_dst_is_dev(kind))
        return fail_(FN, ACL_ERROR_INVALID_PARAM, 1,
                     "kind %s but dst %p is %s", kind_name(kind), dst,
                     d_dev ? "inside a live device allocation" : "not inside a live device allocation");
    if (s_dev != kind_src_is_dev(kind))
        return fail_(FN, ACL_ERROR_INVALID_PARAM, 1,
                     "kind %s but src %p is %s", kind_name(kind), src,
                     s_dev ? "inside a live device allocation" : "not inside a live device allocation");
    if (d_dev && !range_in_alloc(d, d + count, AK_DEVICE))
        return fail_(FN, ACL_ERROR_INVALID_PARAM, 1,
                     "copy of %zu bytes to %p runs past the end of its device allocation", count, dst);
    if (s_dev && !range_in_alloc(s, s + count, AK_DEVICE))
        return fail_(FN, ACL_ERROR_INVALID_PARAM, 1,
                     "copy of %zu bytes from %p runs past the end of its device allocation", count, src);
    if (!d_dev && alloc_containing(d, AK_HOST) >= 0 && !range_in_alloc(d, d + count, AK_HOST))
        return fail_(FN, ACL_ERROR_INVALID_PARAM, 1,
                     "copy of %zu bytes to %p runs past the end of its pinned host allocation", count, dst);
    if (!s_dev && alloc_containing(s, AK_HOST) >= 0 && !range_in_alloc(s, s + count, AK_HOST))
        return fail_(FN, ACL_ERROR_INVALID_PARAM, 1,
                     "copy of %zu bytes from %p runs past the end of its pinned host allocation", count, src);
    return 0;
}

/* For a copy that is recorded into a graph: host sides must be pinned (aclrtMallocHost).
 * Returns NULL when fine, else which side is not pinned. */
static const char *copy_unpinned_side(void *dst, const void *src, size_t count, int kind) {
    if (count == 0) return NULL;
    if (!kind_dst_is_dev(kind) && !range_in_alloc((uintptr_t)dst, (uintptr_t)dst + count, AK_HOST))
        return "destination";
    if (!kind_src_is_dev(kind) && !range_in_alloc((uintptr_t)src, (uintptr_t)src + count, AK_HOST))
        return "source";
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Element types                                                                              */
/* ------------------------------------------------------------------------------------------ */

static size_t dtype_size(int dt) {
    switch (dt) {
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
    case ACL_FLOAT16: case ACL_INT16: case ACL_UINT16: case ACL_BF16: return 2;
    case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
    case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: return 8;
    default: return 0;
    }
}

static const char *dtype_name(int dt) {
    switch (dt) {
    case ACL_DT_UNDEFINED: return "ACL_DT_UNDEFINED";
    case ACL_FLOAT: return "ACL_FLOAT";
    case ACL_FLOAT16: return "ACL_FLOAT16";
    case ACL_INT8: return "ACL_INT8";
    case ACL_INT32: return "ACL_INT32";
    case ACL_UINT8: return "ACL_UINT8";
    case ACL_INT16: return "ACL_INT16";
    case ACL_UINT16: return "ACL_UINT16";
    case ACL_UINT32: return "ACL_UINT32";
    case ACL_INT64: return "ACL_INT64";
    case ACL_UINT64: return "ACL_UINT64";
    case ACL_DOUBLE: return "ACL_DOUBLE";
    case ACL_BOOL: return "ACL_BOOL";
    case ACL_BF16: return "ACL_BF16";
    default: return "unknown dtype";
    }
}

static int dtype_compute_ok(int dt) {
    switch (dt) {
    case ACL_FLOAT: case ACL_FLOAT16: case ACL_BF16: case ACL_DOUBLE: case ACL_INT8:
    case ACL_INT16: case ACL_INT32: case ACL_INT64: case ACL_UINT8: case ACL_BOOL:
        return 1;
    default:
        return 0;
    }
}

/* IEEE-style small float encode/decode (mb mantissa bits, eb exponent bits), round to nearest
 * even, with subnormals, infinities and NaN.  Half: (10, 5); bfloat16: (7, 8). */
static uint32_t enc_small_float(double v, int mb, int eb) {
    uint32_t sign = signbit(v) ? (1u << (mb + eb)) : 0u;
    int bias = (1 << (eb - 1)) - 1;
    uint32_t emax = (1u << eb) - 1u;
    if (isnan(v)) return sign | (emax << mb) | (1u << (mb - 1));
    double a = fabs(v);
    if (isinf(a)) return sign | (emax << mb);
    if (a == 0.0) return sign;
    int ex;
    double fr = frexp(a, &ex); /* a = fr * 2^ex, fr in [0.5, 1) */
    int E = ex - 1 + bias;
    if (E <= 0) {
        /* subnormal: a = q * 2^(1 - bias - mb); q rounding up to 2^mb gives the smallest normal */
        double q = ldexp(a, mb - 1 + bias);
        double r = nearbyint(q);
        return sign | (uint32_t)r;
    }
    double q = ldexp(fr, mb + 1) - ldexp(1.0, mb); /* (2*fr - 1) * 2^mb, exact */
    double r = nearbyint(q);
    if (r >= ldexp(1.0, mb)) {
        r = 0.0;
        E++;
    }
    if (E >= (int)emax) return sign | (emax << mb);
    return sign | ((uint32_t)E << mb) | (uint32_t)r;
}

static double dec_small_float(uint32_t bits, int mb, int eb) {
    int bias = (1 << (eb - 1)) - 1;
    uint32_t emax = (1u << eb) - 1u;
    int neg = (bits >> (mb + eb)) & 1u;
    uint32_t E = (bits >> mb) & emax;
    uint32_t m = bits & ((1u << mb) - 1u);
    double v;
    if (E == emax)
        v = m ? NAN : INFINITY;
    else if (E == 0)
        v = ldexp((double)m, 1 - bias - mb);
    else
        v = ldexp((double)(m + (1u << mb)), (int)E - bias - mb);
    return neg ? -v : v;
}

static double load_elem(int dt, const char *p) {
    switch (dt) {
    case ACL_FLOAT: { float f; memcpy(&f, p, 4); return f; }
    case ACL_DOUBLE: { double d; memcpy(&d, p, 8); return d; }
    case ACL_FLOAT16: { uint16_t h; memcpy(&h, p, 2); return dec_small_float(h, 10, 5); }
    case ACL_BF16: { uint16_t h; memcpy(&h, p, 2); return dec_small_float(h, 7, 8); }
    case ACL_INT8: { int8_t x; memcpy(&x, p, 1); return x; }
    case ACL_INT16: { int16_t x; memcpy(&x, p, 2); return x; }
    case ACL_INT32: { int32_t x; memcpy(&x, p, 4); return x; }
    case ACL_INT64: { int64_t x; memcpy(&x, p, 8); return (double)x; }
    case ACL_UINT8: { uint8_t x; memcpy(&x, p, 1); return x; }
    case ACL_UINT16: { uint16_t x; memcpy(&x, p, 2); return x; }
    case ACL_UINT32: { uint32_t x; memcpy(&x, p, 4); return x; }
    case ACL_UINT64: { uint64_t x; memcpy(&x, p, 8); return (double)x; }
    case ACL_BOOL: { uint8_t x; memcpy(&x, p, 1); return x ? 1.0 : 0.0; }
    default: return 0.0;
    }
}

/* float -> integer: truncate toward zero, NaN -> 0, saturate at the type's range. */
static double trunc_clamp(double v, double lo, double hi) {
    if (isnan(v)) return 0.0;
    v = trunc(v);
    if (v < lo) return lo;
    if (v > hi) return hi;
    return v;
}

static void store_elem(int dt, char *p, double v) {
    switch (dt) {
    case ACL_FLOAT: { float f = (float)v; memcpy(p, &f, 4); break; }
    case ACL_DOUBLE: memcpy(p, &v, 8); break;
    case ACL_FLOAT16: { uint16_t h = (uint16_t)enc_small_float(v, 10, 5); memcpy(p, &h, 2); break; }
    case ACL_BF16: { uint16_t h = (uint16_t)enc_small_float(v, 7, 8); memcpy(p, &h, 2); break; }
    case ACL_INT8: { int8_t x = (int8_t)trunc_clamp(v, -128.0, 127.0); memcpy(p, &x, 1); break; }
    case ACL_INT16: { int16_t x = (int16_t)trunc_clamp(v, -32768.0, 32767.0); memcpy(p, &x, 2); break; }
    case ACL_INT32: { int32_t x = (int32_t)trunc_clamp(v, -2147483648.0, 2147483647.0); memcpy(p, &x, 4); break; }
    case ACL_INT64: {
        int64_t x;
        if (isnan(v)) x = 0;
        else if (v >= 9223372036854775808.0) x = INT64_MAX;
        else if (v < -9223372036854775808.0) x = INT64_MIN;
        else x = (int64_t)trunc(v);
        memcpy(p, &x, 8);
        break;
    }
    case ACL_UINT8: { uint8_t x = (uint8_t)trunc_clamp(v, 0.0, 255.0); memcpy(p, &x, 1); break; }
    case ACL_UINT16: { uint16_t x = (uint16_t)trunc_clamp(v, 0.0, 65535.0); memcpy(p, &x, 2); break; }
    case ACL_UINT32: { uint32_t x = (uint32_t)trunc_clamp(v, 0.0, 4294967295.0); memcpy(p, &x, 4); break; }
    case ACL_UINT64: {
        uint64_t x;
        if (isnan(v) || v <= 0.0) x = 0;
        else if (v >= 18446744073709551616.0) x = UINT64_MAX;
        else x = (uint64_t)trunc(v);
        memcpy(p, &x, 8);
        break;
    }
    case ACL_BOOL: { uint8_t x = (v != 0.0) ? 1 : 0; memcpy(p, &x, 1); break; }
    default: break;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Tensor views                                                                               */
/* ------------------------------------------------------------------------------------------ */

static int64_t shape_numel(int nd, const int64_t *s) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= s[i];
    return n;
}

static int64_t td_numel(const TD *t) { return shape_numel(t->ndim, t->dims); }

static void fmt_shape(int nd, const int64_t *s, char *buf, size_t n) {
    size_t used = 0;
    used += (size_t)snprintf(buf + used, n - used, "[");
    for (int i = 0; i < nd && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%lld", i ? ", " : "", (long long)s[i]);
    if (used < n) snprintf(buf + used, n - used, "]");
}

static int same_shape(int nd, const int64_t *s, const TD *t) {
    if (nd != t->ndim) return 0;
    for (int i = 0; i < nd; i++)
        if (s[i] != t->dims[i]) return 0;
    return 1;
}

/* numpy broadcasting of two shapes; 0 ok, -1 incompatible. */
static int bcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nd, int64_t *out) {
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int ia = i - (n - na), ib = i - (n - nb);
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da == db || db == 1) out[i] = da;
        else if (da == 1) out[i] = db;
        else return -1;
    }
    *nd = n;
    return 0;
}

/* Byte range [lo, hi) touched by a view; 0 when the view is empty. */
static int td_span(const TD *t, uintptr_t *lo, uintptr_t *hi) {
    if (td_numel(t) == 0) return 0;
    int64_t maxi = t->offset;
    for (int d = 0; d < t->ndim; d++) maxi += (t->dims[d] - 1) * t->strides[d];
    size_t es = dtype_size(t->dtype);
    *lo = (uintptr_t)t->data + (uintptr_t)t->offset * es;
    *hi = (uintptr_t)t->data + (uintptr_t)(maxi + 1) * es;
    return 1;
}

/* Strides to read t as if broadcast to `shape` (right-aligned, size-1 dims get stride 0). */
static void view_strides(const TD *t, int nd, const int64_t *shape, int64_t *st) {
    int lead = nd - t->ndim;
    for (int d = 0; d < nd; d++) {
        int j = d - lead;
        if (j < 0) st[d] = 0;
        else if (t->dims[j] == 1 && shape[d] != 1) st[d] = 0;
        else st[d] = t->strides[j];
    }
}

/* Reads t (broadcast to shape) in row-major order into dst, as doubles. */
static void gather(const TD *t, int nd, const int64_t *shape, double *dst) {
    int64_t st[MAXD], idx[MAXD];
    view_strides(t, nd, shape, st);
    memset(idx, 0, sizeof idx);
    int64_t n = shape_numel(nd, shape), off = t->offset;
    size_t es = dtype_size(t->dtype);
    for (int64_t i = 0; i < n; i++) {
        dst[i] = load_elem(t->dtype, t->data + off * (int64_t)es);
        for (int d = nd - 1; d >= 0; d--) {
            off += st[d];
            if (++idx[d] < shape[d]) break;
            off -= st[d] * shape[d];
            idx[d] = 0;
        }
    }
}

/* Writes src (row-major over t's view) through t's strides, converting to t's dtype. */
static void scatter(const TD *t, const double *src) {
    int64_t idx[MAXD];
    memset(idx, 0, sizeof idx);
    int64_t n = td_numel(t), off = t->offset;
    size_t es = dtype_size(t->dtype);
    for (int64_t i = 0; i < n; i++) {
        store_elem(t->dtype, t->data + off * (int64_t)es, src[i]);
        for (int d = t->ndim - 1; d >= 0; d--) {
            off += t->strides[d];
            if (++idx[d] < t->dims[d]) break;
            off -= t->strides[d] * t->dims[d];
            idx[d] = 0;
        }
    }
}

static void gather_bytes(const TD *t, char *dst) {
    int64_t idx[MAXD];
    memset(idx, 0, sizeof idx);
    int64_t n = td_numel(t), off = t->offset;
    size_t es = dtype_size(t->dtype);
    for (int64_t i = 0; i < n; i++) {
        memcpy(dst + i * (int64_t)es, t->data + off * (int64_t)es, es);
        for (int d = t->ndim - 1; d >= 0; d--) {
            off += t->strides[d];
            if (++idx[d] < t->dims[d]) break;
            off -= t->strides[d] * t->dims[d];
            idx[d] = 0;
        }
    }
}

static void scatter_bytes(const TD *t, const char *src) {
    int64_t idx[MAXD];
    memset(idx, 0, sizeof idx);
    int64_t n = td_numel(t), off = t->offset;
    size_t es = dtype_size(t->dtype);
    for (int64_t i = 0; i < n; i++) {
        memcpy(t->data + off * (int64_t)es, src + i * (int64_t)es, es);
        for (int d = t->ndim - 1; d >= 0; d--) {
            off += t->strides[d];
            if (++idx[d] < t->dims[d]) break;
            off -= t->strides[d] * t->dims[d];
            idx[d] = 0;
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Operator computation (inputs are read completely before the output is written, so aliasing */
/* between inputs and output is harmless)                                                     */
/* ------------------------------------------------------------------------------------------ */

static double *dalloc(int64_t n) { return xrealloc(NULL, (size_t)(n > 0 ? n : 1) * sizeof(double)); }

static double unary_fn(int op, double x) {
    switch (op) {
    case OP_RELU: return isnan(x) ? x : (x > 0.0 ? x : 0.0);
    case OP_EXP: return exp(x);
    case OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case OP_TANH: return tanh(x);
    case OP_SQRT: return sqrt(x);
    case OP_NEG: return -x;
    case OP_ABS: return fabs(x);
    default: return x;
    }
}

static void run_exec(const aclOpExecutor *ex) {
    const TD *out = &ex->td[ex->ntd - 1];
    int64_t n = td_numel(out);
    switch (ex->op) {
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: {
        double *a = dalloc(n), *b = dalloc(n);
        gather(&ex->td[0], out->ndim, out->dims, a);
        gather(&ex->td[1], out->ndim, out->dims, b);
        for (int64_t i = 0; i < n; i++) {
            switch (ex->op) {
            case OP_ADD: a[i] = a[i] + ex->alpha * b[i]; break;
            case OP_SUB: a[i] = a[i] - ex->alpha * b[i]; break;
            case OP_MUL: a[i] = a[i] * b[i]; break;
            default: a[i] = a[i] / b[i]; break;
            }
        }
        scatter(out, a);
        free(a);
        free(b);
        break;
    }
    case OP_MATMUL: {
        int nb = ex->nbatch;
        int64_t sa[MAXD + 2], sb[MAXD + 2];
        memcpy(sa, ex->batch, (size_t)nb * sizeof(int64_t));
        memcpy(sb, ex->batch, (size_t)nb * sizeof(int64_t));
        sa[nb] = ex->mm_n; sa[nb + 1] = ex->mm_k;
        sb[nb] = ex->mm_k; sb[nb + 1] = ex->mm_m;
        int64_t B = shape_numel(nb, ex->batch), N = ex->mm_n, K = ex->mm_k, M = ex->mm_m;
        double *a = dalloc(B * N * K), *b = dalloc(B * K * M), *c = dalloc(B * N * M);
        gather(&ex->td[0], nb + 2, sa, a);
        gather(&ex->td[1], nb + 2, sb, b);
        for (int64_t bi = 0; bi < B; bi++)
            for (int64_t i = 0; i < N; i++)
                for (int64_t j = 0; j < M; j++) {
                    double acc = 0.0;
                    for (int64_t k = 0; k < K; k++) acc += a[(bi * N + i) * K + k] * b[(bi * K + k) * M + j];
                    c[(bi * N + i) * M + j] = acc;
                }
        scatter(out, c);
        free(a);
        free(b);
        free(c);
        break;
    }
    case OP_RELU: case OP_EXP: case OP_SIGMOID: case OP_TANH: case OP_SQRT: case OP_NEG: case OP_ABS: {
        double *a = dalloc(n);
        gather(&ex->td[0], out->ndim, out->dims, a);
        for (int64_t i = 0; i < n; i++) a[i] = unary_fn(ex->op, a[i]);
        scatter(out, a);
        free(a);
        break;
    }
    case OP_SOFTMAX: {
        const TD *s = &ex->td[0];
        double *a = dalloc(n);
        gather(s, s->ndim, s->dims, a);
        int64_t outer = 1, len = 1, inner = 1;
        if (s->ndim > 0) {
            for (int d = 0; d < ex->dim; d++) outer *= s->dims[d];
            len = s->dims[ex->dim];
            for (int d = (int)ex->dim + 1; d < s->ndim; d++) inner *= s->dims[d];
        }
        for (int64_t o = 0; o < outer; o++)
            for (int64_t in = 0; in < inner; in++) {
                double *base = a + o * len * inner + in;
                double mx = -INFINITY, sum = 0.0;
                for (int64_t l = 0; l < len; l++)
                    if (base[l * inner] > mx || isnan(base[l * inner])) mx = base[l * inner];
                for (int64_t l = 0; l < len; l++) {
                    base[l * inner] = exp(base[l * inner] - mx);
                    sum += base[l * inner];
                }
                for (int64_t l = 0; l < len; l++) base[l * inner] /= sum;
            }
        scatter(out, a);
        free(a);
        break;
    }
    case OP_CAST: {
        const TD *s = &ex->td[0];
        if (s->dtype == out->dtype) {
            char *buf = xrealloc(NULL, (size_t)(n > 0 ? n : 1) * dtype_size(s->dtype));
            gather_bytes(s, buf);
            scatter_bytes(out, buf);
            free(buf);
        } else {
            double *a = dalloc(n);
            gather(s, s->ndim, s->dims, a);
            scatter(out, a);
            free(a);
        }
        break;
    }
    case OP_PERMUTE: {
        const TD *s = &ex->td[0];
        TD v = *s;
        for (int k = 0; k < s->ndim; k++) {
            v.dims[k] = s->dims[ex->perm[k]];
            v.strides[k] = s->strides[ex->perm[k]];
        }
        char *buf = xrealloc(NULL, (size_t)(n > 0 ? n : 1) * dtype_size(s->dtype));
        gather_bytes(&v, buf);
        scatter_bytes(out, buf);
        free(buf);
        break;
    }
    case OP_REDUCESUM: case OP_MEAN: case OP_AMAX: case OP_AMIN: {
        const TD *s = &ex->td[0];
        int64_t ns = td_numel(s);
        double *a = dalloc(ns);
        gather(s, s->ndim, s->dims, a);
        /* output strides over the kept dims, row-major */
        int64_t ost[MAXD], idx[MAXD];
        int64_t acc = 1, rcount = 1;
        for (int d = s->ndim - 1; d >= 0; d--) {
            if (ex->red[d]) {
                ost[d] = 0;
                rcount *= s->dims[d];
            } else {
                ost[d] = acc;
                acc *= s->dims[d];
            }
        }
        double *r = dalloc(n);
        char *seen = xrealloc(NULL, (size_t)(n > 0 ? n : 1));
        memset(seen, 0, (size_t)(n > 0 ? n : 1));
        for (int64_t i = 0; i < n; i++) r[i] = 0.0;
        memset(idx, 0, sizeof idx);
        int64_t o = 0;
        for (int64_t i = 0; i < ns; i++) {
            double x = a[i];
            switch (ex->op) {
            case OP_REDUCESUM: case OP_MEAN: r[o] += x; break;
            case OP_AMAX:
                if (!seen[o] || isnan(x) || (!isnan(r[o]) && x > r[o])) r[o] = x;
                break;
            default:
                if (!seen[o] || isnan(x) || (!isnan(r[o]) && x < r[o])) r[o] = x;
                break;
            }
            seen[o] = 1;
            for (int d = s->ndim - 1; d >= 0; d--) {
                o += ost[d];
                if (++idx[d] < s->dims[d]) break;
                o -= ost[d] * s->dims[d];
                idx[d] = 0;
            }
        }
        if (ex->op == OP_MEAN)
            for (int64_t i = 0; i < n; i++) r[i] = rcount ? r[i] / (double)rcount : NAN;
        scatter(out, r);
        free(a);
        free(r);
        free(seen);
        break;
    }
    default:
        break;
    }
}

/* Checks the executor's buffers are live device memory.  0 ok, 1 workspace bad, 2 tensor bad;
 * a description goes to why. */
static int exec_mem_check(const aclOpExecutor *ex, const void *ws, uint64_t ws_size, char *why, size_t whylen) {
    if (ex->ws > 0) {
        if (ws_size < ex->ws) {
            snprintf(why, whylen, "workspaceSize %llu is smaller than the required %llu bytes",
                     (unsigned long long)ws_size, (unsigned long long)ex->ws);
            return 1;
        }
        if (!ws || !range_in_alloc((uintptr_t)ws, (uintptr_t)ws + ex->ws, AK_DEVICE)) {
            snprintf(why, whylen,
                     "workspace %p does not point at %llu bytes of live device memory (aclrtMalloc)",
                     ws, (unsigned long long)ex->ws);
            return 1;
        }
    }
    static const char *const names2[] = {"self", "out"};
    static const char *const names3[] = {"self", "other", "out"};
    for (int i = 0; i < ex->ntd; i++) {
        uintptr_t lo, hi;
        const TD *t = &ex->td[i];
        if (!td_span(t, &lo, &hi)) continue;
        if (!range_in_alloc(lo, hi, AK_DEVICE)) {
            char sh[256];
            fmt_shape(t->ndim, t->dims, sh, sizeof sh);
            snprintf(why, whylen,
                     "tensor %s (data %p, shape %s, offset %lld) is not inside a live device allocation",
                     ex->ntd == 3 ? names3[i] : names2[i], (void *)t->data, sh, (long long)t->offset);
            return 2;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Runtime API                                                                                */
/* ------------------------------------------------------------------------------------------ */

EXPORT aclError aclInit(const char *configPath) {
    (void)configPath;
    BEGIN("aclInit");
    if (g_initialized) FAIL(ACL_ERROR_REPEAT_INITIALIZE, "already initialised (call aclFinalize first)");
    g_initialized = 1;
    FINISH();
    return rc_;
}

EXPORT aclError aclFinalize(void) {
    BEGIN("aclFinalize");
    REQUIRE_INIT();
    {
        int64_t nb = count_allocs(AK_DEVICE, -1);
        int64_t ns = (int64_t)g_streams.n, ng = (int64_t)g_graphs.n, nc = (int64_t)g_contexts.n;
        if (nb || ns || ng || nc)
            violation_only("aclFinalize with %lld live device buffers, %lld live streams, %lld live graphs, "
                           "%lld live contexts",
                           (long long)nb, (long long)ns, (long long)ng, (long long)nc);
    }
    g_initialized = 0;
    for (size_t i = 0; i < g_dev_refs_n; i++) g_dev_refs[i] = 0;
    tl_device = -1;
    FINISH();
    return rc_;
}

EXPORT aclError aclrtSetDevice(int32_t deviceId) {
    BEGIN("aclrtSetDevice");
    REQUIRE_INIT();
    if (deviceId < 0 || (uint32_t)deviceId >= g_device_count)
        FAIL(ACL_ERROR_INVALID_PARAM, "device id %d is out of range (device count %u)", deviceId, g_device_count);
    if ((size_t)deviceId >= g_dev_refs_n) {
        size_t nn = (size_t)deviceId + 1;
        g_dev_refs = xrealloc(g_dev_refs, nn * sizeof *g_dev_refs);
        for (size_t i = g_dev_refs_n; i < nn; i++) g_dev_refs[i] = 0;
        g_dev_refs_n = nn;
    }
    g_dev_refs[deviceId]++;
    tl_device = deviceId;
    FINISH();
    return rc_;
}

EXPORT aclError aclrtResetDevice(int32_t deviceId) {
    BEGIN("aclrtResetDevice");
    REQUIRE_INIT();
    if (deviceId < 0 || (uint32_t)deviceId >= g_device_count)
        FAIL(ACL_ERROR_INVALID_PARAM, "device id %d is out of range (device count %u)", deviceId, g_device_count);
    if ((size_t)deviceId >= g_dev_refs_n || g_dev_refs[deviceId] <= 0)
        FAIL(ACL_ERROR_INVALID_PARAM, "device %d is not set", deviceId);
    g_dev_refs[deviceId]--;
    if (g_dev_refs[deviceId] == 0) {
        int64_t live = count_allocs(AK_DEVICE, deviceId);
        if (live)
            violation_only("aclrtResetDevice(%d) with %lld live device buffers", deviceId, (long long)live);
        if (tl_device == deviceId) tl_device = -1;
    }
    FINISH();
    return rc_;
}

EXPORT aclError aclrtGetDeviceCount(uint32_t *count) {
    BEGIN("aclrtGetDeviceCount");
    if (!count) FAIL(ACL_ERROR_INVALID_PARAM, "count is NULL");
    *count = g_device_count;
    FINISH();
    return rc_;
}

EXPORT aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId) {
    BEGIN("aclrtCreateContext");
    REQUIRE_INIT();
    REQUIRE_DEVICE();
    if (!context) FAIL(ACL_ERROR_INVALID_PARAM, "context is NULL");
    if (deviceId < 0 || (uint32_t)deviceId >= g_device_count)
        FAIL(ACL_ERROR_INVALID_PARAM, "device id %d is out of range (device count %u)", deviceId, g_device_count);
    {
        Context *c = xrealloc(NULL, sizeof *c);
        c->device = deviceId;
        ps_add(&g_contexts, c);
        *context = c;
        tl_device = deviceId;
    }
    FINISH();
    return rc_;
}

EXPORT aclError aclrtDestroyContext(aclrtContext context) {
    BEGIN("aclrtDestroyContext");
    REQUIRE_INIT();
    REQUIRE_DEVICE();
    if (!ps_remove(&g_contexts, context)) VIOL(ACL_ERROR_INVALID_PARAM, "context %p is not a live context", context);
    free(context);
    FINISH();
    return rc_;
}

EXPORT aclError aclrtSetCurrentContext(aclrtContext context) {
    BEGIN("aclrtSetCurrentContext");
    REQUIRE_INIT();
    REQUIRE_DEVICE();
    if (!ps_has(&g_contexts, context)) VIOL(ACL_ERROR_INVALID_PARAM, "context %p is not a live context", context);
    tl_device = ((Context *)context)->device;
    FINISH();
    return rc_;
}

EXPORT aclError aclrtCreateStream(aclrtStream *stream) {
    BEGIN("aclrtCreateStream");
    REQUIRE_INIT();
    REQUIRE_DEVICE();
    if (!stream) FAIL(ACL_ERROR_INVALID_PARAM, "stream is NULL");
    {
        Stream *s = xrealloc(NULL, sizeof *s);
        memset(s, 0, sizeof *s);
        ps_add(&g_streams, s);
        *stream = s;
    }
    FINISH();
    return rc_;
}

EXPORT aclError aclrtDestroyStream(aclrtStream stream) {
    BEGIN("aclrtDestroyStream");
    REQUIRE_INIT();
    REQUIRE_DEVICE();
    if (!ps_has(&g_streams, stream)) VIOL(ACL_ERROR_INVALID_PARAM, "stream %p is not a live stream", stream);
    if (((Stream *)stream)->cap_state != CAP_NONE)
        VIOL(ACL_ERROR_RT_INTERNAL_ERROR, "stream %p is still capturing (call aclmdlRICaptureEnd first)", stream);
    ps_remove(&g_streams, stream);
    free(stream);
    FINISH();
    return rc_;
}

EXPORT aclError aclrtSynchronizeStream(aclrtStream stream) {
    BEGIN("aclrtSynchronizeStream");
    REQUIRE_INIT();
    CHECK_CAPTURE();
    REQUIRE_DEVICE();
    if (!stream_known(stream)) VIOL(ACL_ERROR_INVALID_PARAM, "stream %p is not a live stream", stream);
    if (stream && ((Stream *)stream)->cap_state != CAP_NONE) {
        ((Stream *)stream)->cap_state = CAP_INVALIDATED;
        rc_ = fail_raw(FN, ACL_ERROR_RT_INTERNAL_ERROR, 1,
                       "%s is not allowed while stream capture is active (the stream itself is capturing)", FN);
        goto done_;
    }
    FINISH();
    return rc_;
}

EXPORT aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    BEGIN("aclrtMalloc");
    REQUIRE_INIT();
    CHECK_CAPTURE();
    REQUIRE_DEVICE();
    if (!devPtr) FAIL(ACL_ERROR_INVALID_PARAM, "devPtr is NULL");
    if (size == 0) FAIL(ACL_ERROR_INVALID_PARAM, "size must be greater than 0");
    if ((int)policy < ACL_MEM_MALLOC_HUGE_FIRST || (int)policy > ACL_MEM_MALLOC_NORMAL_ONLY)
        FAIL(ACL_ERROR_INVALID_PARAM, "invalid memory policy %d", (int)policy);
    {
        void *p = size > ((size_t)1 << 40) ? NULL : dev_alloc_mem(size);
        if (!p) FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION, "cannot allocate %zu bytes", size);
        alloc_add(p, size, AK_DEVICE);
        *devPtr = p;
    }
    FINISH();
    return rc_;
}

EXPORT aclError aclrtFree(void *devPtr) {
    BEGIN("aclrtFree");
    REQUIRE_INIT();
    CHECK_CAPTURE();
    {
        long i = alloc_containing((uintptr_t)devPtr, AK_DEVICE);
        if (!devPtr || i < 0 || g_allocs[i].base != (uintptr_t)devPtr)
            VIOL(ACL_ERROR_INVALID_PARAM, "%p is not a live device allocation (double free?)", devPtr);
        g_allocs[i] = g_allocs[--g_nallocs];
        free(devPtr);
    }
    FINISH();
    return rc_;
}

EXPORT aclError aclrtMallocHost(void **hostPtr, size_t size) {
    BEGIN("aclrtMallocHost");
    REQUIRE_INIT();
    CHECK_CAPTURE();
    if (!hostPtr) FAIL(ACL_ERROR_INVALID_PARAM, "hostPtr is NULL");
    if (size == 0) FAIL(ACL_ERROR_INVALID_PARAM, "size must be greater than 0");
    {
        void *p = size > ((size_t)1 << 40) ? NULL : dev_alloc_mem(size);
        if (!p) FAIL(ACL_ERROR_RT_MEMORY_ALLOCATION, "cannot allocate %zu bytes", size);
        alloc_add(p, size, AK_HOST);
        *hostPtr = p;
    }
    FINISH();
    return rc_;
}

EXPORT aclError aclrtFreeHost(void *hostPtr) {
    BEGIN("aclrtFreeHost");
    REQUIRE_INIT();
    CHECK_CAPTURE();
    {
        long i = alloc_containing((uintptr_t)hostPtr, AK_HOST);
        if (!hostPtr || i < 0 || g_allocs[i].base != (uintptr_t)hostPtr)
            VIOL(ACL_ERROR_INVALID_PARAM, "%p is not a live host allocation from aclrtMallocHost (double free?)",
                 hostPtr);
        g_allocs[i] = g_allocs[--g_nallocs];
        free(hostPtr);
    }
    FINISH();
    return rc_;
}

EXPORT aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
    BEGIN("aclrtMemcpy");
    REQUIRE_INIT();
    CHECK_CAPTURE();
    TRY(check_copy(FN, dst, destMax, src, count, (int)kind));
    if (count) memmove(dst, src, count);
    FINISH();
    return rc_;
}

EXPORT aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count,
                                 aclrtMemcpyKind kind, aclrtStream stream) {
    BEGIN("aclrtMemcpyAsync");
    REQUIRE_INIT();
    if (!stream_known(stream)) VIOL(ACL_ERROR_INVALID_PARAM, "stream %p is not a live stream", stream);
    TRY(check_copy(FN, dst, destMax, src, count, (int)kind));
    {
        Stream *s = (Stream *)stream;
        const char *unpinned = copy_unpinned_side(dst, src, count, (int)kind);
        if (s && s->cap_state != CAP_NONE) {
            if (s->cap_state == CAP_INVALIDATED)
                FAIL(ACL_ERROR_RT_INTERNAL_ERROR, "the capture on stream %p was invalidated", stream);
            if (unpinned) {
                s->cap_state = CAP_INVALIDATED;
                rc_ = fail_raw(FN, ACL_ERROR_RT_INTERNAL_ERROR, 1,
                               "%s is not allowed while stream capture is active (host %s is not pinned "
                               "memory from aclrtMallocHost)", FN, unpinned);
                goto done_;
            }
            Task t;
            memset(&t, 0, sizeof t);
            t.kind = TASK_COPY;
            t.dst = dst;
            t.src = src;
            t.count = count;
            t.copy_kind = (int)kind;
            graph_push(s->cap_graph, &t);
            tag_ = " [captured]";
        } else {
            if (unpinned && capture_prohibits(1)) {
                rc_ = fail_raw(FN, ACL_ERROR_RT_INTERNAL_ERROR, 1,
                               "%s is not allowed while stream capture is active (host %s is not pinned "
                               "memory from aclrtMallocHost)", FN, unpinned);
                goto done_;
            }
            if (count) memmove(dst, src, count);
        }
    }
    FINISH();
    return rc_;
}

EXPORT aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
    BEGIN("aclrtMemset");
    REQUIRE_INIT();
    CHECK_CAPTURE();
    if (count > maxCount) VIOL(ACL_ERROR_INVALID_PARAM, "count %zu exceeds maxCount %zu", count, maxCount);
    if (count) {
        uintptr_t p = (uintptr_t)devPtr;
        if (!devPtr || (!range_in_alloc(p, p + count, AK_DEVICE) && !range_in_alloc(p, p + count, AK_HOST)))
            VIOL(ACL_ERROR_INVALID_PARAM, "%zu bytes at %p are not inside a live device allocation", count, devPtr);
        memset(devPtr, (unsigned char)value, count);
    }
    FINISH();
    return rc_;
}

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

/* ------------------------------------------------------------------------------------------ */
/* nnopbase: tensors, scalars, int arrays                                                     */
/* ------------------------------------------------------------------------------------------ */

EXPORT aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                                  const int64_t *stride, int64_t offset, aclFormat format,
                                  const int64_t *storageDims, uint64_t storageDimsNum, void *tensorData) {
    aclTensor *res = NULL;
    BEGIN("aclCreateTensor");
    REQUIRE_INIT();
    if (viewDimsNum > MAXD) FAIL(ACLNN_ERR_PARAM_INVALID, "rank %llu exceeds the maximum of %d",
                                 (unsigned long long)viewDimsNum, MAXD);
    if (viewDimsNum > 0 && !viewDims) FAIL(ACLNN_ERR_PARAM_NULLPTR, "viewDims is NULL");
    if (dtype_size((int)dataType) == 0) FAIL(ACLNN_ERR_PARAM_INVALID, "invalid data type %d", (int)dataType);
    if ((int)format != ACL_FORMAT_NCHW && (int)format != ACL_FORMAT_NHWC && (int)format != ACL_FORMAT_ND)
        FAIL(ACLNN_ERR_PARAM_INVALID, "unsupported format %d", (int)format);
    if (offset < 0) FAIL(ACLNN_ERR_PARAM_INVALID, "negative offset %lld", (long long)offset);
    if (storageDimsNum > MAXD) FAIL(ACLNN_ERR_PARAM_INVALID, "storage rank %llu exceeds the maximum of %d",
                                    (unsigned long long)storageDimsNum, MAXD);
    if (storageDimsNum > 0 && !storageDims) FAIL(ACLNN_ERR_PARAM_NULLPTR, "storageDims is NULL");
    {
        TD td;
        memset(&td, 0, sizeof td);
        td.dtype = (int)dataType;
        td.ndim = (int)viewDimsNum;
        td.offset = offset;
        td.data = tensorData;
        int64_t numel = 1;
        for (int i = 0; i < td.ndim; i++) {
            if (viewDims[i] < 0) FAIL(ACLNN_ERR_PARAM_INVALID, "negative dimension %lld at index %d",
                                      (long long)viewDims[i], i);
            td.dims[i] = viewDims[i];
            if (viewDims[i] > 0 && numel > MAX_ELEMS / viewDims[i])
                FAIL(ACLNN_ERR_PARAM_INVALID, "too many elements");
            numel *= viewDims[i];
        }
        int64_t acc = 1;
        for (int i = td.ndim - 1; i >= 0; i--) {
            if (stride) {
                if (stride[i] < 0) FAIL(ACLNN_ERR_PARAM_INVALID, "negative stride %lld at index %d",
                                        (long long)stride[i], i);
                td.strides[i] = stride[i];
            } else {
                td.strides[i] = acc;
            }
            acc *= td.dims[i] > 0 ? td.dims[i] : 1;
        }
        if (numel > 0) {
            int64_t maxi = offset;
            for (int i = 0; i < td.ndim; i++) {
                if (td.strides[i] > 0 && td.dims[i] - 1 > (MAX_ELEMS - maxi) / td.strides[i])
                    FAIL(ACLNN_ERR_PARAM_INVALID, "view extent too large");
                maxi += (td.dims[i] - 1) * td.strides[i];
            }
            if (storageDims || storageDimsNum > 0) {
                int64_t sn = 1;
                for (uint64_t i = 0; i < storageDimsNum; i++) {
                    if (storageDims[i] < 0) FAIL(ACLNN_ERR_PARAM_INVALID, "negative storage dimension");
                    if (storageDims[i] > 0 && sn > MAX_ELEMS / storageDims[i])
                        FAIL(ACLNN_ERR_PARAM_INVALID, "too many storage elements");
                    sn *= storageDims[i];
                }
                if (maxi + 1 > sn)
                    FAIL(ACLNN_ERR_PARAM_INVALID,
                         "view (offset %lld, last element index %lld) does not fit in the storage of %lld elements",
                         (long long)offset, (long long)maxi, (long long)sn);
            }
        }
        res = xrealloc(NULL, sizeof *res);
        res->td = td;
        ps_add(&g_tensors, res);
    }
    FINISH();
    if (rc_) return NULL;
    return res;
}

EXPORT aclnnStatus aclDestroyTensor(const aclTensor *tensor) {
    BEGIN("aclDestroyTensor");
    REQUIRE_INIT();
    if (!tensor) FAIL(ACLNN_ERR_PARAM_NULLPTR, "tensor is NULL");
    if (!ps_remove(&g_tensors, tensor)) VIOL(ACLNN_ERR_PARAM_INVALID, "%p is not a live aclTensor (double destroy?)",
                                             (const void *)tensor);
    free((void *)tensor);
    FINISH();
    return rc_;
}

EXPORT aclScalar *aclCreateScalar(void *value, aclDataType dataType) {
    aclScalar *res = NULL;
    BEGIN("aclCreateScalar");
    REQUIRE_INIT();
    if (!value) FAIL(ACLNN_ERR_PARAM_NULLPTR, "value is NULL");
    {
        size_t es = dtype_size((int)dataType);
        if (!es) FAIL(ACLNN_ERR_PARAM_INVALID, "invalid data type %d", (int)dataType);
        res = xrealloc(NULL, sizeof *res);
        memset(res, 0, sizeof *res);
        res->dtype = (int)dataType;
        memcpy(res->raw, value, es);
        res->v = load_elem(res->dtype, (const char *)res->raw);
        ps_add(&g_scalars, res);
    }
    FINISH();
    if (rc_) return NULL;
    return res;
}

EXPORT aclnnStatus aclDestroyScalar(const aclScalar *scalar) {
    BEGIN("aclDestroyScalar");
    REQUIRE_INIT();
    if (!scalar) FAIL(ACLNN_ERR_PARAM_NULLPTR, "scalar is NULL");
    if (!ps_remove(&g_scalars, scalar)) VIOL(ACLNN_ERR_PARAM_INVALID, "%p is not a live aclScalar (double destroy?)",
                                             (const void *)scalar);
    free((void *)scalar);
    FINISH();
    return rc_;
}

EXPORT aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size) {
    aclIntArray *res = NULL;
    BEGIN("aclCreateIntArray");
    REQUIRE_INIT();
    if (size > 0 && !value) FAIL(ACLNN_ERR_PARAM_NULLPTR, "value is NULL");
    if (size > ((uint64_t)1 << 24)) FAIL(ACLNN_ERR_PARAM_INVALID, "size %llu is too large", (unsigned long long)size);
    res = xrealloc(NULL, sizeof *res);
    res->n = size;
    res->v = xrealloc(NULL, (size_t)(size ? size : 1) * sizeof(int64_t));
    if (size) memcpy(res->v, value, (size_t)size * sizeof(int64_t));
    ps_add(&g_arrays, res);
    FINISH();
    if (rc_) return NULL;
    return res;
}

EXPORT aclnnStatus aclDestroyIntArray(const aclIntArray *array) {
    BEGIN("aclDestroyIntArray");
    REQUIRE_INIT();
    if (!array) FAIL(ACLNN_ERR_PARAM_NULLPTR, "array is NULL");
    if (!ps_remove(&g_arrays, array)) VIOL(ACLNN_ERR_PARAM_INVALID, "%p is not a live aclIntArray (double destroy?)",
                                           (const void *)array);
    free(array->v);
    free((void *)array);
    FINISH();
    return rc_;
}

/* Not in the brief's list, but part of CANN's API: frees an executor that will never be launched. */
EXPORT aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor) {
    BEGIN("aclDestroyAclOpExecutor");
    REQUIRE_INIT();
    if (!executor) FAIL(ACLNN_ERR_PARAM_NULLPTR, "executor is NULL");
    if (!ps_remove(&g_executors, executor))
        VIOL(ACLNN_ERR_PARAM_INVALID, "executor %p is not live", (void *)executor);
    free_executor(executor);
    FINISH();
    return rc_;
}

/* ------------------------------------------------------------------------------------------ */
/* opapi: GetWorkspaceSize (validation + executor creation)                                   */
/* ------------------------------------------------------------------------------------------ */

static int get_td(const char *FN, const aclTensor *t, const char *arg, TD *td) {
    if (!t) return fail_(FN, ACLNN_ERR_PARAM_NULLPTR, 0, "%s is NULL", arg);
    if (!ps_has(&g_tensors, t))
        return fail_(FN, ACLNN_ERR_PARAM_INVALID, 1, "%s (%p) is not a live aclTensor", arg, (const void *)t);
    *td = t->td;
    return 0;
}

static int need_compute(const char *FN, const TD *td, const char *arg) {
    if (!dtype_compute_ok(td->dtype))
        return fail_(FN, ACLNN_ERR_PARAM_INVALID, 0, "%s has unsupported dtype %s (%d)", arg,
                     dtype_name(td->dtype), td->dtype);
    return 0;
}

static int need_ptr(const char *FN, const void *p, const char *arg) {
    if (!p) return fail_(FN, ACLNN_ERR_PARAM_NULLPTR, 0, "%s is NULL", arg);
    return 0;
}

static int need_same_shape(const char *FN, const TD *out, int nd, const int64_t *shape, const char *what) {
    if (!same_shape(nd, shape, out)) {
        char a[256], b[256];
        fmt_shape(out->ndim, out->dims, a, sizeof a);
        fmt_shape(nd, shape, b, sizeof b);
        return fail_(FN, ACLNN_ERR_PARAM_INVALID, 0, "out shape %s does not match the %s shape %s", a, what, b);
    }
    return 0;
}

static int get_int_array(const char *FN, const aclIntArray *a, const char *arg) {
    if (!a) return fail_(FN, ACLNN_ERR_PARAM_NULLPTR, 0, "%s is NULL", arg);
    if (!ps_has(&g_arrays, a))
        return fail_(FN, ACLNN_ERR_PARAM_INVALID, 1, "%s (%p) is not a live aclIntArray", arg, (const void *)a);
    return 0;
}

static aclOpExecutor *new_exec(int op) {
    aclOpExecutor *ex = xrealloc(NULL, sizeof *ex);
    memset(ex, 0, sizeof *ex);
    ex->op = op;
    return ex;
}

static void publish_exec(aclOpExecutor *ex, uint64_t ws, uint64_t *workspaceSize, aclOpExecutor **executor) {
    ex->ws = ws;
    ps_add(&g_executors, ex);
    *workspaceSize = ws;
    *executor = ex;
}

#define GWS_PROLOGUE(name)                                                       \
    if (executor) *executor = NULL;                                              \
    BEGIN(name);                                                                 \
    REQUIRE_INIT();                                                              \
    TRY(need_ptr(FN, workspaceSize, "workspaceSize"));                           \
    TRY(need_ptr(FN, executor, "executor"))

static aclnnStatus gws_binary(const char *name, int op, const aclTensor *self, const aclTensor *other,
                              const aclScalar *alpha, int has_alpha, aclTensor *out, uint64_t *workspaceSize,
                              aclOpExecutor **executor) {
    TD a, b, o;
    GWS_PROLOGUE(name);
    TRY(get_td(FN, self, "self", &a));
    TRY(get_td(FN, other, "other", &b));
    TRY(get_td(FN, out, "out", &o));
    if (has_alpha) {
        TRY(need_ptr(FN, alpha, "alpha"));
        if (!ps_has(&g_scalars, alpha))
            VIOL(ACLNN_ERR_PARAM_INVALID, "alpha (%p) is not a live aclScalar", (const void *)alpha);
    }
    TRY(need_compute(FN, &a, "self"));
    TRY(need_compute(FN, &b, "other"));
    TRY(need_compute(FN, &o, "out"));
    {
        int nd;
        int64_t shape[MAXD];
        if (bcast_shapes(a.ndim, a.dims, b.ndim, b.dims, &nd, shape)) {
            char sa[256], sb[256];
            fmt_shape(a.ndim, a.dims, sa, sizeof sa);
            fmt_shape(b.ndim, b.dims, sb, sizeof sb);
            FAIL(ACLNN_ERR_PARAM_INVALID, "shapes %s and %s cannot be broadcast together", sa, sb);
        }
        TRY(need_same_shape(FN, &o, nd, shape, "broadcast"));
        aclOpExecutor *ex = new_exec(op);
        ex->ntd = 3;
        ex->td[0] = a;
        ex->td[1] = b;
        ex->td[2] = o;
        ex->alpha = has_alpha ? alpha->v : 1.0;
        publish_exec(ex, 0, workspaceSize, executor);
    }
    FINISH();
    return rc_;
}

static aclnnStatus gws_unary(const char *name, int op, const aclTensor *self, aclTensor *out,
                             uint64_t *workspaceSize, aclOpExecutor **executor) {
    TD a, o;
    GWS_PROLOGUE(name);
    TRY(get_td(FN, self, "self", &a));
    TRY(get_td(FN, out, "out", &o));
    TRY(need_compute(FN, &a, "self"));
    TRY(need_compute(FN, &o, "out"));
    TRY(need_same_shape(FN, &o, a.ndim, a.dims, "self"));
    {
        aclOpExecutor *ex = new_exec(op);
        ex->ntd = 2;
        ex->td[0] = a;
        ex->td[1] = o;
        publish_exec(ex, 0, workspaceSize, executor);
    }
    FINISH();
    return rc_;
}

/* Normalises a possibly negative dim for rank nd (rank 0 accepts 0 and -1). -1 on error. */
static int norm_dim(int64_t d, int nd, int64_t *outd) {
    int r = nd > 0 ? nd : 1;
    if (d < -r || d >= r) return -1;
    *outd = d < 0 ? d + r : d;
    return 0;
}

static aclnnStatus gws_reduce(const char *name, int op, const aclTensor *self, const aclIntArray *dim, bool keep,
                              int has_dtype, int dtype, aclTensor *out, uint64_t *workspaceSize,
                              aclOpExecutor **executor) {
    TD a, o;
    GWS_PROLOGUE(name);
    TRY(get_td(FN, self, "self", &a));
    TRY(get_int_array(FN, dim, "dim"));
    TRY(get_td(FN, out, "out", &o));
    TRY(need_compute(FN, &a, "self"));
    TRY(need_compute(FN, &o, "out"));
    if (has_dtype && dtype != ACL_DT_UNDEFINED && dtype != o.dtype)
        FAIL(ACLNN_ERR_PARAM_INVALID, "dtype %s (%d) differs from out's dtype %s", dtype_name(dtype), dtype,
             dtype_name(o.dtype));
    {
        uint8_t red[MAXD];
        memset(red, 0, sizeof red);
        if (dim->n == 0) {
            for (int d = 0; d < a.ndim; d++) red[d] = 1;
        } else {
            for (uint64_t i = 0; i < dim->n; i++) {
                int64_t d;
                if (norm_dim(dim->v[i], a.ndim, &d))
                    FAIL(ACLNN_ERR_PARAM_INVALID, "dim %lld is out of range for rank %d", (long long)dim->v[i],
                         a.ndim);
                if (a.ndim == 0) continue;
                if (red[d]) FAIL(ACLNN_ERR_PARAM_INVALID, "dim %lld appears more than once", (long long)dim->v[i]);
                red[d] = 1;
            }
        }
        int nd = 0;
        int64_t shape[MAXD], rcount = 1;
        for (int d = 0; d < a.ndim; d++) {
            if (red[d]) {
                rcount *= a.dims[d];
                if (keep) shape[nd++] = 1;
            } else {
                shape[nd++] = a.dims[d];
            }
        }
        if ((op == OP_AMAX || op == OP_AMIN) && rcount == 0)
            FAIL(ACLNN_ERR_PARAM_INVALID, "cannot reduce over an empty set of elements");
        TRY(need_same_shape(FN, &o, nd, shape, "reduced"));
        aclOpExecutor *ex = new_exec(op);
        ex->ntd = 2;
        ex->td[0] = a;
        ex->td[1] = o;
        ex->keep = keep;
        memcpy(ex->red, red, sizeof red);
        publish_exec(ex, WORKSPACE_BYTES, workspaceSize, executor);
    }
    FINISH();
    return rc_;
}

#define UNARY_GWS(NAME, OP)                                                                               \
    EXPORT aclnnStatus aclnn##NAME##GetWorkspaceSize(const aclTensor *self, aclTensor *out,                \
                                                      uint64_t *workspaceSize, aclOpExecutor **executor) { \
        return gws_unary("aclnn" #NAME "GetWorkspaceSize", OP, self, out, workspaceSize, executor);        \
    }

EXPORT aclnnStatus aclnnAddGetWorkspaceSize(const aclTensor *self, const aclTensor *other, const aclScalar *alpha,
                                            aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
    return gws_binary("aclnnAddGetWorkspaceSize", OP_ADD, self, other, alpha, 1, out, workspaceSize, executor);
}

EXPORT aclnnStatus aclnnSubGetWorkspaceSize(const aclTensor *self, const aclTensor *other, const aclScalar *alpha,
                                            aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
    return gws_binary("aclnnSubGetWorkspaceSize", OP_SUB, self, other, alpha, 1, out, workspaceSize, executor);
}

EXPORT aclnnStatus aclnnMulGetWorkspaceSize(const aclTensor *self, const aclTensor *other, aclTensor *out,
                                            uint64_t *workspaceSize, aclOpExecutor **executor) {
    return gws_binary("aclnnMulGetWorkspaceSize", OP_MUL, self, other, NULL, 0, out, workspaceSize, executor);
}

EXPORT aclnnStatus aclnnDivGetWorkspaceSize(const aclTensor *self, const aclTensor *other, aclTensor *out,
                                            uint64_t *workspaceSize, aclOpExecutor **executor) {
    return gws_binary("aclnnDivGetWorkspaceSize", OP_DIV, self, other, NULL, 0, out, workspaceSize, executor);
}

UNARY_GWS(Relu, OP_RELU)
UNARY_GWS(Exp, OP_EXP)
UNARY_GWS(Sigmoid, OP_SIGMOID)
UNARY_GWS(Tanh, OP_TANH)
UNARY_GWS(Sqrt, OP_SQRT)
UNARY_GWS(Neg, OP_NEG)
UNARY_GWS(Abs, OP_ABS)

EXPORT aclnnStatus aclnnMatmulGetWorkspaceSize(const aclTensor *self, const aclTensor *mat2, aclTensor *out,
                                               int8_t cubeMathType, uint64_t *workspaceSize,
                                               aclOpExecutor **executor) {
    TD a, b, o;
    GWS_PROLOGUE("aclnnMatmulGetWorkspaceSize");
    TRY(get_td(FN, self, "self", &a));
    TRY(get_td(FN, mat2, "mat2", &b));
    TRY(get_td(FN, out, "out", &o));
    TRY(need_compute(FN, &a, "self"));
    TRY(need_compute(FN, &b, "mat2"));
    TRY(need_compute(FN, &o, "out"));
    if (cubeMathType < 0 || cubeMathType > 3) FAIL(ACLNN_ERR_PARAM_INVALID, "invalid cubeMathType %d", cubeMathType);
    if (a.ndim < 1 || b.ndim < 1)
        FAIL(ACLNN_ERR_PARAM_INVALID, "matmul needs tensors of rank >= 1 (got ranks %d and %d)", a.ndim, b.ndim);
    {
        int a_vec = a.ndim == 1, b_vec = b.ndim == 1;
        if (a_vec) { /* [k] -> [1, k] */
            a.dims[1] = a.dims[0]; a.strides[1] = a.strides[0];
            a.dims[0] = 1; a.strides[0] = 0;
            a.ndim = 2;
        }
        if (b_vec) { /* [k] -> [k, 1] */
            b.dims[1] = 1; b.strides[1] = 0;
            b.ndim = 2;
        }
        int64_t n = a.dims[a.ndim - 2], k = a.dims[a.ndim - 1], k2 = b.dims[b.ndim - 2], m = b.dims[b.ndim - 1];
        if (k != k2) {
            char sa[256], sb[256];
            fmt_shape(self->td.ndim, self->td.dims, sa, sizeof sa);
            fmt_shape(mat2->td.ndim, mat2->td.dims, sb, sizeof sb);
            FAIL(ACLNN_ERR_PARAM_INVALID, "inner dimensions differ: self %s, mat2 %s", sa, sb);
        }
        int nb;
        int64_t batch[MAXD], shape[MAXD + 2];
        if (bcast_shapes(a.ndim - 2, a.dims, b.ndim - 2, b.dims, &nb, batch)) {
            char sa[256], sb[256];
            fmt_shape(self->td.ndim, self->td.dims, sa, sizeof sa);
            fmt_shape(mat2->td.ndim, mat2->td.dims, sb, sizeof sb);
            FAIL(ACLNN_ERR_PARAM_INVALID, "batch dimensions of self %s and mat2 %s cannot be broadcast", sa, sb);
        }
        int nd = nb;
        memcpy(shape, batch, (size_t)nb * sizeof(int64_t));
        if (!a_vec) shape[nd++] = n;
        if (!b_vec) shape[nd++] = m;
        if (nd > MAXD) FAIL(ACLNN_ERR_PARAM_INVALID, "result rank too large");
        TRY(need_same_shape(FN, &o, nd, shape, "matmul result"));
        aclOpExecutor *ex = new_exec(OP_MATMUL);
        ex->ntd = 3;
        ex->td[0] = a;
        ex->td[1] = b;
        ex->td[2] = o;
        ex->nbatch = nb;
        memcpy(ex->batch, batch, sizeof batch);
        ex->mm_n = n;
        ex->mm_k = k;
        ex->mm_m = m;
        publish_exec(ex, WORKSPACE_BYTES, workspaceSize, executor);
    }
    FINISH();
    return rc_;
}

EXPORT aclnnStatus aclnnSoftmaxGetWorkspaceSize(const aclTensor *self, int64_t dim, aclTensor *out,
                                                uint64_t *workspaceSize, aclOpExecutor **executor) {
    TD a, o;
    GWS_PROLOGUE("aclnnSoftmaxGetWorkspaceSize");
    TRY(get_td(FN, self, "self", &a));
    TRY(get_td(FN, out, "out", &o));
    TRY(need_compute(FN, &a, "self"));
    TRY(need_compute(FN, &o, "out"));
    TRY(need_same_shape(FN, &o, a.ndim, a.dims, "self"));
    {
        int64_t d;
        if (norm_dim(dim, a.ndim, &d))
            FAIL(ACLNN_ERR_PARAM_INVALID, "dim %lld is out of range for rank %d", (long long)dim, a.ndim);
        aclOpExecutor *ex = new_exec(OP_SOFTMAX);
        ex->ntd = 2;
        ex->td[0] = a;
        ex->td[1] = o;
        ex->dim = a.ndim > 0 ? d : 0;
        publish_exec(ex, 0, workspaceSize, executor);
    }
    FINISH();
    return rc_;
}

EXPORT aclnnStatus aclnnCastGetWorkspaceSize(const aclTensor *self, const aclDataType dtype, aclTensor *out,
                                             uint64_t *workspaceSize, aclOpExecutor **executor) {
    TD a, o;
    GWS_PROLOGUE("aclnnCastGetWorkspaceSize");
    TRY(get_td(FN, self, "self", &a));
    TRY(get_td(FN, out, "out", &o));
    TRY(need_compute(FN, &a, "self"));
    TRY(need_compute(FN, &o, "out"));
    if ((int)dtype != o.dtype)
        FAIL(ACLNN_ERR_PARAM_INVALID, "dtype %s (%d) differs from out's dtype %s", dtype_name((int)dtype),
             (int)dtype, dtype_name(o.dtype));
    TRY(need_same_shape(FN, &o, a.ndim, a.dims, "self"));
    {
        aclOpExecutor *ex = new_exec(OP_CAST);
        ex->ntd = 2;
        ex->td[0] = a;
        ex->td[1] = o;
        ex->dtype = (int)dtype;
        publish_exec(ex, 0, workspaceSize, executor);
    }
    FINISH();
    return rc_;
}

EXPORT aclnnStatus aclnnPermuteGetWorkspaceSize(const aclTensor *self, const aclIntArray *dims, aclTensor *out,
                                                uint64_t *workspaceSize, aclOpExecutor **executor) {
    TD a, o;
    GWS_PROLOGUE("aclnnPermuteGetWorkspaceSize");
    TRY(get_td(FN, self, "self", &a));
    TRY(get_int_array(FN, dims, "dims"));
    TRY(get_td(FN, out, "out", &o));
    TRY(need_compute(FN, &a, "self"));
    if (o.dtype != a.dtype)
        FAIL(ACLNN_ERR_PARAM_INVALID, "out dtype %s differs from self dtype %s", dtype_name(o.dtype),
             dtype_name(a.dtype));
    if (dims->n != (uint64_t)a.ndim)
        FAIL(ACLNN_ERR_PARAM_INVALID, "dims has %llu entries but self has rank %d", (unsigned long long)dims->n,
             a.ndim);
    {
        int perm[MAXD];
        uint8_t used[MAXD];
        int64_t shape[MAXD];
        memset(used, 0, sizeof used);
        for (int i = 0; i < a.ndim; i++) {
            int64_t d;
            if (norm_dim(dims->v[i], a.ndim, &d))
                FAIL(ACLNN_ERR_PARAM_INVALID, "dims[%d] = %lld is out of range for rank %d", i,
                     (long long)dims->v[i], a.ndim);
            if (used[d]) FAIL(ACLNN_ERR_PARAM_INVALID, "dims is not a permutation (%lld repeated)", (long long)d);
            used[d] = 1;
            perm[i] = (int)d;
            shape[i] = a.dims[d];
        }
        TRY(need_same_shape(FN, &o, a.ndim, shape, "permuted"));
        aclOpExecutor *ex = new_exec(OP_PERMUTE);
        ex->ntd = 2;
        ex->td[0] = a;
        ex->td[1] = o;
        memcpy(ex->perm, perm, (size_t)a.ndim * sizeof(int));
        publish_exec(ex, 0, workspaceSize, executor);
    }
    FINISH();
    return rc_;
}

EXPORT aclnnStatus aclnnReduceSumGetWorkspaceSize(const aclTensor *self, const aclIntArray *dim, bool keepDims,
                                                  aclDataType dtype, aclTensor *out, uint64_t *workspaceSize,
                                                  aclOpExecutor **executor) {
    return gws_reduce("aclnnReduceSumGetWorkspaceSize", OP_REDUCESUM, self, dim, keepDims, 1, (int)dtype, out,
                      workspaceSize, executor);
}

EXPORT aclnnStatus aclnnMeanGetWorkspaceSize(const aclTensor *self, const aclIntArray *dim, bool keepDim,
                                             aclDataType dtype, aclTensor *out, uint64_t *workspaceSize,
                                             aclOpExecutor **executor) {
    return gws_reduce("aclnnMeanGetWorkspaceSize", OP_MEAN, self, dim, keepDim, 1, (int)dtype, out, workspaceSize,
                      executor);
}

EXPORT aclnnStatus aclnnAmaxGetWorkspaceSize(const aclTensor *self, const aclIntArray *dim, bool keepDim,
                                             aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
    return gws_reduce("aclnnAmaxGetWorkspaceSize", OP_AMAX, self, dim, keepDim, 0, 0, out, workspaceSize, executor);
}

EXPORT aclnnStatus aclnnAminGetWorkspaceSize(const aclTensor *self, const aclIntArray *dim, bool keepDim,
                                             aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
    return gws_reduce("aclnnAminGetWorkspaceSize", OP_AMIN, self, dim, keepDim, 0, 0, out, workspaceSize, executor);
}

/* ------------------------------------------------------------------------------------------ */
/* opapi: launches                                                                            */
/* ------------------------------------------------------------------------------------------ */

static aclnnStatus launch(int op, void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                          aclrtStream stream) {
    BEGIN(op_launch_names[op]);
    REQUIRE_INIT();
    if (!executor) VIOL(ACLNN_ERR_PARAM_INVALID, "executor is NULL (not live)");
    if (!ps_has(&g_executors, executor))
        VIOL(ACLNN_ERR_PARAM_INVALID, "executor %p is not live (already launched, or never created)",
             (void *)executor);
    if (executor->op != op)
        VIOL(ACLNN_ERR_PARAM_INVALID, "executor %p was created by %sGetWorkspaceSize", (void *)executor,
             op_launch_names[executor->op]);
    /* From here on the launch consumes the executor, whatever happens. */
    ps_remove(&g_executors, executor);
    if (!stream_known(stream)) {
        free_executor(executor);
        VIOL(ACLNN_ERR_PARAM_INVALID, "stream %p is not a live stream", stream);
    }
    {
        char why[1024];
        int bad = exec_mem_check(executor, workspace, workspaceSize, why, sizeof why);
        if (bad) {
            free_executor(executor);
            VIOL(bad == 1 ? ACLNN_ERR_PARAM_INVALID : ACLNN_ERR_RUNTIME_ERROR, "%s", why);
        }
    }
    {
        Stream *s = (Stream *)stream;
        if (s && s->cap_state != CAP_NONE) {
            if (s->cap_state == CAP_INVALIDATED) {
                free_executor(executor);
                FAIL(ACLNN_ERR_RUNTIME_ERROR, "the capture on stream %p was invalidated", stream);
            }
            Task t;
            memset(&t, 0, sizeof t);
            t.kind = TASK_OP;
            t.ex = executor;
            t.ws = workspace;
            t.ws_size = workspaceSize;
            graph_push(s->cap_graph, &t);
            tag_ = " [captured]";
        } else {
            run_exec(executor);
            free_executor(executor);
        }
    }
done_:
    /* An injected failure consumes the executor too, like every failing launch of a live one. */
    if (strcmp(tag_, " [injected]") == 0 && executor && ps_remove(&g_executors, executor))
        free_executor(executor);
    log_call(FN, tag_, rc_);
    unlock_();
    return rc_;
}

#define LAUNCHER(NAME, OP)                                                                          \
    EXPORT aclnnStatus aclnn##NAME(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, \
                                   aclrtStream stream) {                                            \
        return launch(OP, workspace, workspaceSize, executor, stream);                              \
    }

LAUNCHER(Add, OP_ADD)
LAUNCHER(Sub, OP_SUB)
LAUNCHER(Mul, OP_MUL)
LAUNCHER(Div, OP_DIV)
LAUNCHER(Matmul, OP_MATMUL)
LAUNCHER(Relu, OP_RELU)
LAUNCHER(Exp, OP_EXP)
LAUNCHER(Sigmoid, OP_SIGMOID)
LAUNCHER(Tanh, OP_TANH)
LAUNCHER(Sqrt, OP_SQRT)
LAUNCHER(Neg, OP_NEG)
LAUNCHER(Abs, OP_ABS)
LAUNCHER(Softmax, OP_SOFTMAX)
LAUNCHER(Cast, OP_CAST)
LAUNCHER(Permute, OP_PERMUTE)
LAUNCHER(ReduceSum, OP_REDUCESUM)
LAUNCHER(Mean, OP_MEAN)
LAUNCHER(Amax, OP_AMAX)
LAUNCHER(Amin, OP_AMIN)

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
