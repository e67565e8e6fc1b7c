/*
 * ACL test double: the runtime API (aclInit, devices, contexts, streams, memory, copies) and
 * the bookkeeping of devices and allocations it checks against.  See acl_double_internal.h.
 */
#include "acl_double_internal.h"

/* ------------------------------------------------------------------------------------------ */
/* Devices, allocations, streams                                                              */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    uintptr_t base;
    size_t size;
    int kind;
    int32_t device;
} Alloc;

typedef struct {
    int32_t device;
} Context;

static int64_t *g_dev_refs;
static size_t g_dev_refs_n;
static Alloc *g_allocs;
static size_t g_nallocs, g_allocs_cap;
static _Thread_local int32_t tl_device = -1;

int64_t devices_set_total(void) {
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
int range_in_alloc(uintptr_t lo, uintptr_t hi, int kind) {
    long i = alloc_containing(lo, kind);
    if (i < 0) return 0;
    return hi >= lo && hi - g_allocs[i].base <= g_allocs[i].size;
}

int64_t count_allocs(int kind, int32_t device) {
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

/* The argument checks aclrtMalloc and aclrtMallocHost start with: 0 or an error. */
static int need_out_and_size(const char *FN, void **ptr, const char *arg, size_t size) {
    if (!ptr) return fail_(FN, ACL_ERROR_INVALID_PARAM, 0, "%s is NULL", arg);
    if (size == 0) return fail_(FN, ACL_ERROR_INVALID_PARAM, 0, "size must be greater than 0");
    return 0;
}

/* Allocates size bytes as a live allocation of `kind` into *ptr: 0 or an error. */
static int alloc_into(const char *FN, void **ptr, size_t size, int kind) {
    void *p = size > ((size_t)1 << 40) ? NULL : dev_alloc_mem(size);
    if (!p) return fail_(FN, ACL_ERROR_RT_MEMORY_ALLOCATION, 0, "cannot allocate %zu bytes", size);
    alloc_add(p, size, kind);
    *ptr = p;
    return 0;
}

/* Frees ptr, which must be the start of a live allocation of `kind` (what: its name in the
 * message): 0 or an error (violation recorded). */
static int free_live(const char *FN, void *ptr, int kind, const char *what) {
    long i = alloc_containing((uintptr_t)ptr, kind);
    if (!ptr || i < 0 || g_allocs[i].base != (uintptr_t)ptr)
        return fail_(FN, ACL_ERROR_INVALID_PARAM, 1, "%p is not a live %s (double free?)", ptr, what);
    g_allocs[i] = g_allocs[--g_nallocs];
    free(ptr);
    return 0;
}

/* 0 when deviceId names one of the g_device_count devices, else an error. */
static int device_in_range(const char *FN, int32_t deviceId) {
    if (deviceId < 0 || (uint32_t)deviceId >= g_device_count)
        return fail_(FN, ACL_ERROR_INVALID_PARAM, 0, "device id %d is out of range (device count %u)", deviceId,
                     g_device_count);
    return 0;
}

/* Fails FN as a call that an active stream capture forbids ("FN is not allowed while stream
 * capture is active<detail>"), recording a violation. */
static int forbidden_in_capture(const char *FN, const char *detail) {
    return fail_msg(FN, ACL_ERROR_RT_INTERNAL_ERROR, 1, 0, "%s is not allowed while stream capture is active%s", FN,
                    detail);
}

int stream_known(aclrtStream s) { return s == NULL || ps_has(&g_streams, s); }

#define CHECK_CAPTURE()                                                                        \
    do {                                                                                       \
        if (capture_prohibits(1)) TRY(forbidden_in_capture(FN, ""));                          \
    } while (0)

const char *kind_name(int kind) {
    switch (kind) {
    case ACL_MEMCPY_HOST_TO_HOST: return "ACL_MEMCPY_HOST_TO_HOST";
    case ACL_MEMCPY_HOST_TO_DEVICE: return "ACL_MEMCPY_HOST_TO_DEVICE";
    case ACL_MEMCPY_DEVICE_TO_HOST: return "ACL_MEMCPY_DEVICE_TO_HOST";
    case ACL_MEMCPY_DEVICE_TO_DEVICE: return "ACL_MEMCPY_DEVICE_TO_DEVICE";
    default: return "invalid kind";
    }
}

int kind_dst_is_dev(int kind) {
    return kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
}
int kind_src_is_dev(int kind) {
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
    TRY(device_in_range(FN, deviceId));
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
    TRY(device_in_range(FN, deviceId));
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
    TRY(device_in_range(FN, deviceId));
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
        TRY(forbidden_in_capture(FN, " (the stream itself is capturing)"));
    }
    FINISH();
    return rc_;
}

EXPORT aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    BEGIN("aclrtMalloc");
    REQUIRE_INIT();
    CHECK_CAPTURE();
    REQUIRE_DEVICE();
    TRY(need_out_and_size(FN, devPtr, "devPtr", size));
    if ((int)policy < ACL_MEM_MALLOC_HUGE_FIRST || (int)policy > ACL_MEM_MALLOC_NORMAL_ONLY)
        FAIL(ACL_ERROR_INVALID_PARAM, "invalid memory policy %d", (int)policy);
    TRY(alloc_into(FN, devPtr, size, AK_DEVICE));
    FINISH();
    return rc_;
}

EXPORT aclError aclrtFree(void *devPtr) {
    BEGIN("aclrtFree");
    REQUIRE_INIT();
    CHECK_CAPTURE();
    TRY(free_live(FN, devPtr, AK_DEVICE, "device allocation"));
    FINISH();
    return rc_;
}

EXPORT aclError aclrtMallocHost(void **hostPtr, size_t size) {
    BEGIN("aclrtMallocHost");
    REQUIRE_INIT();
    CHECK_CAPTURE();
    TRY(need_out_and_size(FN, hostPtr, "hostPtr", size));
    TRY(alloc_into(FN, hostPtr, size, AK_HOST));
    FINISH();
    return rc_;
}

EXPORT aclError aclrtFreeHost(void *hostPtr) {
    BEGIN("aclrtFreeHost");
    REQUIRE_INIT();
    CHECK_CAPTURE();
    TRY(free_live(FN, hostPtr, AK_HOST, "host allocation from aclrtMallocHost"));
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
        char unpinned_why[96] = "";
        if (unpinned)
            snprintf(unpinned_why, sizeof unpinned_why, " (host %s is not pinned memory from aclrtMallocHost)",
                     unpinned);
        if (s && s->cap_state != CAP_NONE) {
            if (s->cap_state == CAP_INVALIDATED)
                FAIL(ACL_ERROR_RT_INTERNAL_ERROR, "the capture on stream %p was invalidated", stream);
            if (unpinned) {
                s->cap_state = CAP_INVALIDATED;
                TRY(forbidden_in_capture(FN, unpinned_why));
            }
            graph_push(s->cap_graph,
                       &(Task){.kind = TASK_COPY, .dst = dst, .src = src, .count = count, .copy_kind = (int)kind});
            tag_ = " [captured]";
        } else {
            if (unpinned && capture_prohibits(1)) TRY(forbidden_in_capture(FN, unpinned_why));
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
