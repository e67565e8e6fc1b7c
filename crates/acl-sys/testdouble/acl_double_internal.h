/*
 * Internals of the ACL test double, shared by its source files.  Not part of any ABI: the CANN
 * types the double implements are in acl_abi.h; everything declared here is INTERNAL (hidden),
 * so the built library exports exactly the ACL functions and the acl_test_double_* hooks.
 *
 * The sources, compiled together into one shared library (see acl_test_double.c):
 *   acl_test_double.c     shared state, utilities, call log, counts, errors, violations, fault
 *                         injection and introspection (acl_test_double_*), aclGetRecentErrMsg
 *   acl_double_runtime.c  devices, contexts, streams, memory, copies (the aclrt* runtime API)
 *   acl_double_capture.c  stream capture rules and captured graphs (aclmdlRI*)
 *   acl_double_tensor.c   element types, tensor views, nnopbase descriptors (aclCreateTensor, ...)
 *   acl_double_kernels.c  the operators computed on the host (run_exec) and launch-time checks
 *   acl_double_ops.c      the aclnn operators: GetWorkspaceSize validation and launches
 */
#ifndef ACL_DOUBLE_INTERNAL_H
#define ACL_DOUBLE_INTERNAL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
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
/* Shared between the double's files, not exported from the library. */
#define INTERNAL __attribute__((visibility("hidden")))

/* The CANN ABI types, enum values and error codes. */
#include "acl_abi.h"

#define MAXD 16                          /* maximum tensor rank accepted */
#define MAX_ELEMS (((int64_t)1) << 46)   /* sanity bound on element counts / extents */
#define LOG_MAX 100000                   /* call-log lines kept */
#define WORKSPACE_BYTES 256              /* workspace reported by Matmul and the reductions */
#define DEV_ALIGN 64

/* ------------------------------------------------------------------------------------------ */
/* Types                                                                                      */
/* ------------------------------------------------------------------------------------------ */

/* A set of live object pointers (linear; live counts in tests are small). */
typedef struct {
    const void **v;
    size_t n, cap;
} PtrSet;

enum { AK_DEVICE = 1, AK_HOST = 2 };

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

/* ------------------------------------------------------------------------------------------ */
/* Shared state (acl_test_double.c; all behind the global mutex, see lock_)                   */
/* ------------------------------------------------------------------------------------------ */

extern INTERNAL int g_initialized;
extern INTERNAL uint32_t g_device_count;
extern INTERNAL PtrSet g_streams, g_contexts, g_graphs, g_tensors, g_scalars, g_arrays, g_executors;

/* ------------------------------------------------------------------------------------------ */
/* acl_test_double.c: utilities, locking, log, counts, errors, violations, injection          */
/* ------------------------------------------------------------------------------------------ */

INTERNAL void *xrealloc(void *p, size_t n);
INTERNAL void ps_add(PtrSet *s, const void *p);
INTERNAL int ps_has(const PtrSet *s, const void *p);
INTERNAL int ps_remove(PtrSet *s, const void *p);
INTERNAL void lock_(void);
INTERNAL void unlock_(void);
INTERNAL void count_call(const char *fn);
/* Records a violation without touching the error message (used where the call still succeeds). */
__attribute__((format(printf, 1, 2))) INTERNAL void violation_only(const char *fmt, ...);
/* Sets the recent error message to "<fn>: <text>" (just "<text>" when !prefix), records a
 * violation too when viol, returns code. */
__attribute__((format(printf, 5, 6))) INTERNAL int fail_msg(const char *fn, int code, int viol, int prefix,
                                                             const char *fmt, ...);
/* fail_msg with the "<fn>: " prefix, the usual way a call fails. */
#define fail_(fn, code, viol, ...) fail_msg((fn), (code), (viol), 1, __VA_ARGS__)
/* Takes a pending injected failure of fn (acl_test_double_fail_next): 1 and *code set if any. */
INTERNAL int take_injection(const char *fn, int *code);
INTERNAL void log_call(const char *fn, const char *tag, int rc);

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
/* acl_double_runtime.c: devices, allocations, streams, copies                                */
/* ------------------------------------------------------------------------------------------ */

INTERNAL int64_t devices_set_total(void);
/* 1 when [lo, hi) lies inside one live allocation of `kind`. */
INTERNAL int range_in_alloc(uintptr_t lo, uintptr_t hi, int kind);
/* Live allocations of `kind` on `device` (any device when device < 0). */
INTERNAL int64_t count_allocs(int kind, int32_t device);
/* 1 for the default (NULL) stream and live streams. */
INTERNAL int stream_known(aclrtStream s);
INTERNAL const char *kind_name(int kind);
INTERNAL int kind_dst_is_dev(int kind);
INTERNAL int kind_src_is_dev(int kind);

/* ------------------------------------------------------------------------------------------ */
/* acl_double_capture.c: capture rules, captured graphs                                       */
/* ------------------------------------------------------------------------------------------ */

INTERNAL int64_t streams_capturing(void);
/* Whether the calling thread may not make "unsafe" calls now (see the definition). */
INTERNAL int capture_prohibits(int invalidate);
INTERNAL void graph_push(Graph *g, const Task *t);

/* ------------------------------------------------------------------------------------------ */
/* acl_double_tensor.c: element types, tensor views                                           */
/* ------------------------------------------------------------------------------------------ */

INTERNAL size_t dtype_size(int dt);
INTERNAL const char *dtype_name(int dt);
INTERNAL int dtype_compute_ok(int dt);
INTERNAL int64_t shape_numel(int nd, const int64_t *s);
INTERNAL int64_t td_numel(const TD *t);
INTERNAL void fmt_shape(int nd, const int64_t *s, char *buf, size_t n);
INTERNAL int same_shape(int nd, const int64_t *s, const TD *t);
/* numpy broadcasting of two shapes; 0 ok, -1 incompatible. */
INTERNAL int bcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nd, int64_t *out);
/* Byte range [lo, hi) touched by a view; 0 when the view is empty. */
INTERNAL int td_span(const TD *t, uintptr_t *lo, uintptr_t *hi);
/* A row-major walk over a strided index space: off is the offset (in elements) of the current
 * index idx; walk_next moves to the next index (after the last one it wraps to the first). */
typedef struct {
    int nd;
    const int64_t *dims, *strides;
    int64_t idx[MAXD];
    int64_t off;
} Walk;

static inline Walk walk_start(int nd, const int64_t *dims, const int64_t *strides, int64_t off) {
    Walk w = {.nd = nd, .dims = dims, .strides = strides, .off = off};
    return w;
}

static inline void walk_next(Walk *w) {
    for (int d = w->nd - 1; d >= 0; d--) {
        w->off += w->strides[d];
        if (++w->idx[d] < w->dims[d]) break;
        w->off -= w->strides[d] * w->dims[d];
        w->idx[d] = 0;
    }
}

/* Reads t (broadcast to shape) in row-major order into dst, as doubles. */
INTERNAL void gather(const TD *t, int nd, const int64_t *shape, double *dst);
/* Writes src (row-major over t's view) through t's strides, converting to t's dtype. */
INTERNAL void scatter(const TD *t, const double *src);
/* gather/scatter of raw elements (no conversion; t's dtype on both sides). */
INTERNAL void gather_bytes(const TD *t, char *dst);
INTERNAL void scatter_bytes(const TD *t, const char *src);

/* ------------------------------------------------------------------------------------------ */
/* acl_double_kernels.c: operator computation                                                 */
/* ------------------------------------------------------------------------------------------ */

INTERNAL void run_exec(const aclOpExecutor *ex);
/* Checks the executor's buffers are live device memory.  0 ok, 1 workspace bad, 2 tensor bad;
 * a description goes to why. */
INTERNAL int exec_mem_check(const aclOpExecutor *ex, const void *ws, uint64_t ws_size, char *why, size_t whylen);

/* ------------------------------------------------------------------------------------------ */
/* acl_double_ops.c: aclnn executors                                                          */
/* ------------------------------------------------------------------------------------------ */

/* The launch function's name of each OP_* ("aclnnAdd", ...). */
extern INTERNAL const char *const op_launch_names[OP_COUNT];
INTERNAL void free_executor(aclOpExecutor *ex);

#endif /* ACL_DOUBLE_INTERNAL_H */
