/*
 * Self-test of the ACL test double (acl_test_double.c and the other acl_*.c sources) for ge-rs tests.
 * Not Huawei's library; nothing here runs on an NPU.
 *
 * Build and run:
 *   cc -std=c11 -O1 -Wall -o selftest selftest.c -ldl && ./selftest ./libacl_test_double.so
 * Prints "selftest ok" and exits 0, or prints every failed check and exits 1.
 * (No libm here: the build line does not link it.)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl_abi.h" /* the CANN types and enum values, shared with the double */

enum { H2H = 0, H2D = 1, D2H = 2, D2D = 3 };
enum { MODE_GLOBAL = 0, MODE_THREAD_LOCAL = 1, MODE_RELAXED = 2 };
enum { STATUS_NONE = 0, STATUS_ACTIVE = 1, STATUS_INVALIDATED = 2 };

typedef aclnnStatus (*LaunchFn)(void *, uint64_t, aclOpExecutor *, aclrtStream);

#define API(X)                                                                                         \
    X(aclError, aclInit, (const char *))                                                               \
    X(aclError, aclFinalize, (void))                                                                   \
    X(aclError, aclrtSetDevice, (int32_t))                                                             \
    X(aclError, aclrtResetDevice, (int32_t))                                                           \
    X(aclError, aclrtGetDeviceCount, (uint32_t *))                                                     \
    X(aclError, aclrtCreateContext, (aclrtContext *, int32_t))                                         \
    X(aclError, aclrtDestroyContext, (aclrtContext))                                                   \
    X(aclError, aclrtSetCurrentContext, (aclrtContext))                                                \
    X(aclError, aclrtCreateStream, (aclrtStream *))                                                    \
    X(aclError, aclrtDestroyStream, (aclrtStream))                                                     \
    X(aclError, aclrtSynchronizeStream, (aclrtStream))                                                 \
    X(aclError, aclrtMalloc, (void **, size_t, int))                                                   \
    X(aclError, aclrtFree, (void *))                                                                   \
    X(aclError, aclrtMallocHost, (void **, size_t))                                                    \
    X(aclError, aclrtFreeHost, (void *))                                                               \
    X(aclError, aclrtMemcpy, (void *, size_t, const void *, size_t, int))                              \
    X(aclError, aclrtMemcpyAsync, (void *, size_t, const void *, size_t, int, aclrtStream))            \
    X(aclError, aclrtMemset, (void *, size_t, int32_t, size_t))                                        \
    X(const char *, aclGetRecentErrMsg, (void))                                                        \
    X(aclError, aclmdlRICaptureBegin, (aclrtStream, int))                                              \
    X(aclError, aclmdlRICaptureGetInfo, (aclrtStream, int *, aclmdlRI *))                              \
    X(aclError, aclmdlRICaptureEnd, (aclrtStream, aclmdlRI *))                                         \
    X(aclError, aclmdlRICaptureThreadExchangeMode, (int *))                                            \
    X(aclError, aclmdlRIExecuteAsync, (aclmdlRI, aclrtStream))                                         \
    X(aclError, aclmdlRIDestroy, (aclmdlRI))                                                           \
    X(aclTensor *, aclCreateTensor,                                                                    \
      (const int64_t *, uint64_t, int, const int64_t *, int64_t, int, const int64_t *, uint64_t, void *)) \
    X(aclnnStatus, aclDestroyTensor, (const aclTensor *))                                              \
    X(aclScalar *, aclCreateScalar, (void *, int))                                                     \
    X(aclnnStatus, aclDestroyScalar, (const aclScalar *))                                              \
    X(aclIntArray *, aclCreateIntArray, (const int64_t *, uint64_t))                                   \
    X(aclnnStatus, aclDestroyIntArray, (const aclIntArray *))                                          \
    X(aclnnStatus, aclnnAddGetWorkspaceSize,                                                           \
      (const aclTensor *, const aclTensor *, const aclScalar *, aclTensor *, uint64_t *, aclOpExecutor **)) \
    X(aclnnStatus, aclnnSubGetWorkspaceSize,                                                           \
      (const aclTensor *, const aclTensor *, const aclScalar *, aclTensor *, uint64_t *, aclOpExecutor **)) \
    X(aclnnStatus, aclnnMulGetWorkspaceSize,                                                           \
      (const aclTensor *, const aclTensor *, aclTensor *, uint64_t *, aclOpExecutor **))               \
    X(aclnnStatus, aclnnDivGetWorkspaceSize,                                                           \
      (const aclTensor *, const aclTensor *, aclTensor *, uint64_t *, aclOpExecutor **))               \
    X(aclnnStatus, aclnnMatmulGetWorkspaceSize,                                                        \
      (const aclTensor *, const aclTensor *, aclTensor *, int8_t, uint64_t *, aclOpExecutor **))       \
    X(aclnnStatus, aclnnReluGetWorkspaceSize, (const aclTensor *, aclTensor *, uint64_t *, aclOpExecutor **)) \
    X(aclnnStatus, aclnnExpGetWorkspaceSize, (const aclTensor *, aclTensor *, uint64_t *, aclOpExecutor **)) \
    X(aclnnStatus, aclnnSigmoidGetWorkspaceSize, (const aclTensor *, aclTensor *, uint64_t *, aclOpExecutor **)) \
    X(aclnnStatus, aclnnTanhGetWorkspaceSize, (const aclTensor *, aclTensor *, uint64_t *, aclOpExecutor **)) \
    X(aclnnStatus, aclnnSqrtGetWorkspaceSize, (const aclTensor *, aclTensor *, uint64_t *, aclOpExecutor **)) \
    X(aclnnStatus, aclnnNegGetWorkspaceSize, (const aclTensor *, aclTensor *, uint64_t *, aclOpExecutor **)) \
    X(aclnnStatus, aclnnAbsGetWorkspaceSize, (const aclTensor *, aclTensor *, uint64_t *, aclOpExecutor **)) \
    X(aclnnStatus, aclnnSoftmaxGetWorkspaceSize, (const aclTensor *, int64_t, aclTensor *, uint64_t *, aclOpExecutor **)) \
    X(aclnnStatus, aclnnCastGetWorkspaceSize, (const aclTensor *, int, aclTensor *, uint64_t *, aclOpExecutor **)) \
    X(aclnnStatus, aclnnPermuteGetWorkspaceSize,                                                       \
      (const aclTensor *, const aclIntArray *, aclTensor *, uint64_t *, aclOpExecutor **))             \
    X(aclnnStatus, aclnnReduceSumGetWorkspaceSize,                                                     \
      (const aclTensor *, const aclIntArray *, bool, int, aclTensor *, uint64_t *, aclOpExecutor **))  \
    X(aclnnStatus, aclnnMeanGetWorkspaceSize,                                                          \
      (const aclTensor *, const aclIntArray *, bool, int, aclTensor *, uint64_t *, aclOpExecutor **))  \
    X(aclnnStatus, aclnnAmaxGetWorkspaceSize,                                                          \
      (const aclTensor *, const aclIntArray *, bool, aclTensor *, uint64_t *, aclOpExecutor **))       \
    X(aclnnStatus, aclnnAminGetWorkspaceSize,                                                          \
      (const aclTensor *, const aclIntArray *, bool, aclTensor *, uint64_t *, aclOpExecutor **))       \
    X(aclnnStatus, aclnnAdd, (void *, uint64_t, aclOpExecutor *, aclrtStream))                         \
    X(aclnnStatus, aclnnSub, (void *, uint64_t, aclOpExecutor *, aclrtStream))                         \
    X(aclnnStatus, aclnnMul, (void *, uint64_t, aclOpExecutor *, aclrtStream))                         \
    X(aclnnStatus, aclnnDiv, (void *, uint64_t, aclOpExecutor *, aclrtStream))                         \
    X(aclnnStatus, aclnnMatmul, (void *, uint64_t, aclOpExecutor *, aclrtStream))                      \
    X(aclnnStatus, aclnnRelu, (void *, uint64_t, aclOpExecutor *, aclrtStream))                        \
    X(aclnnStatus, aclnnExp, (void *, uint64_t, aclOpExecutor *, aclrtStream))                         \
    X(aclnnStatus, aclnnSigmoid, (void *, uint64_t, aclOpExecutor *, aclrtStream))                     \
    X(aclnnStatus, aclnnTanh, (void *, uint64_t, aclOpExecutor *, aclrtStream))                        \
    X(aclnnStatus, aclnnSqrt, (void *, uint64_t, aclOpExecutor *, aclrtStream))                        \
    X(aclnnStatus, aclnnNeg, (void *, uint64_t, aclOpExecutor *, aclrtStream))                         \
    X(aclnnStatus, aclnnAbs, (void *, uint64_t, aclOpExecutor *, aclrtStream))                         \
    X(aclnnStatus, aclnnSoftmax, (void *, uint64_t, aclOpExecutor *, aclrtStream))                     \
    X(aclnnStatus, aclnnCast, (void *, uint64_t, aclOpExecutor *, aclrtStream))                        \
    X(aclnnStatus, aclnnPermute, (void *, uint64_t, aclOpExecutor *, aclrtStream))                     \
    X(aclnnStatus, aclnnReduceSum, (void *, uint64_t, aclOpExecutor *, aclrtStream))                   \
    X(aclnnStatus, aclnnMean, (void *, uint64_t, aclOpExecutor *, aclrtStream))                        \
    X(aclnnStatus, aclnnAmax, (void *, uint64_t, aclOpExecutor *, aclrtStream))                        \
    X(aclnnStatus, aclnnAmin, (void *, uint64_t, aclOpExecutor *, aclrtStream))                        \
    X(void, acl_test_double_reset, (void))                                                             \
    X(void, acl_test_double_set_device_count, (uint32_t))                                              \
    X(void, acl_test_double_fail_next, (const char *, int, const char *))                              \
    X(int64_t, acl_test_double_calls, (const char *))                                                  \
    X(int64_t, acl_test_double_live, (const char *))                                                   \
    X(int64_t, acl_test_double_violations, (void))                                                     \
    X(const char *, acl_test_double_log, (void))

#define DECL(r, n, a) static r(*n) a;
API(DECL)

static int g_failures;

#define CHECK(cond, ...)                                           \
    do {                                                           \
        if (!(cond)) {                                             \
            printf("FAIL %s:%d: (%s) ", __FILE__, __LINE__, #cond); \
            printf(__VA_ARGS__);                                   \
            printf("\n");                                          \
            g_failures++;                                          \
        }                                                          \
    } while (0)

#define CHECK_RC(expr, want)                                                                   \
    do {                                                                                       \
        long long got_ = (long long)(expr);                                                    \
        CHECK(got_ == (long long)(want), "%s returned %lld, expected %lld", #expr, got_,       \
              (long long)(want));                                                              \
    } while (0)

static double absd(double x) { return x < 0 ? -x : x; }
static int close_to(double a, double b, double tol) { return absd(a - b) <= tol * (1.0 + absd(b)); }

static void check_floats(const char *what, const float *got, const double *want, int n, double tol) {
    for (int i = 0; i < n; i++)
        CHECK(close_to(got[i], want[i], tol), "%s[%d] = %.9g, expected %.9g", what, i, got[i], want[i]);
}

/* Takes and clears the recent error message; checks it contains `needle` (when given). */
static void check_msg(const char *needle) {
    const char *m = aclGetRecentErrMsg();
    CHECK(m != NULL, "expected an error message containing \"%s\"", needle ? needle : "");
    if (m && needle) CHECK(strstr(m, needle) != NULL, "message \"%s\" lacks \"%s\"", m, needle);
}

static void *dev_alloc(size_t bytes) {
    void *p = NULL;
    CHECK_RC(aclrtMalloc(&p, bytes, 0), 0);
    return p;
}

static void *dev_from(const void *host, size_t bytes) {
    void *p = dev_alloc(bytes);
    CHECK_RC(aclrtMemcpy(p, bytes, host, bytes, H2D), 0);
    return p;
}

static void to_host(void *host, const void *dev, size_t bytes) {
    CHECK_RC(aclrtMemcpy(host, bytes, dev, bytes, D2H), 0);
}

/* Tensor over `data` with the given dims and (optional) strides, offset 0, 1-D storage. */
static aclTensor *mkt(const int64_t *dims, int nd, int dt, const int64_t *strides, void *data) {
    int64_t st[16], numel = 1, acc = 1, maxi = 0;
    for (int i = nd - 1; i >= 0; i--) {
        st[i] = strides ? strides[i] : acc;
        acc *= dims[i];
    }
    for (int i = 0; i < nd; i++) numel *= dims[i];
    for (int i = 0; i < nd; i++) maxi += (dims[i] - 1) * st[i];
    int64_t storage = numel ? maxi + 1 : 0;
    aclTensor *t = aclCreateTensor(dims, (uint64_t)nd, dt, st, 0, ACL_FORMAT_ND, &storage, 1, data);
    CHECK(t != NULL, "aclCreateTensor failed");
    return t;
}

static void *g_ws;       /* a 1 KiB device workspace */
static aclrtStream g_st; /* a stream */

/* Launches an executor obtained from a GetWorkspaceSize that returned rc. */
/* ws and ex are read through pointers, after the GetWorkspaceSize call (an argument) has run. */
static void go(const char *what, aclnnStatus rc, const uint64_t *wsp, aclOpExecutor *const *exp, LaunchFn fn) {
    CHECK(rc == 0, "%s GetWorkspaceSize returned %d (%s)", what, rc, rc ? aclGetRecentErrMsg() : "");
    if (rc) return;
    uint64_t ws = *wsp;
    aclOpExecutor *ex = *exp;
    CHECK(ws <= 1024, "%s workspace %llu too big", what, (unsigned long long)ws);
    aclnnStatus r = fn(ws ? g_ws : NULL, ws, ex, g_st);
    CHECK(r == 0, "%s launch returned %d (%s)", what, r, r ? aclGetRecentErrMsg() : "");
}

static void *load_lib(const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("FAIL: dlopen(%s): %s\n", path, dlerror());
        exit(1);
    }
#define LOAD(r, n, a)                                        \
    n = (r(*) a)dlsym(h, #n);                                \
    if (!n) {                                                \
        printf("FAIL: missing symbol %s\n", #n);             \
        exit(1);                                             \
    }
    API(LOAD)
#undef LOAD
    return h;
}

/* ------------------------------------------------------------------------------------------ */

static void test_lifecycle(void) {
    int64_t v0 = acl_test_double_violations();
    uint32_t n = 0;
    CHECK_RC(aclrtGetDeviceCount(&n), 0);
    CHECK(n == 1, "device count %u", n);
    CHECK_RC(aclrtSetDevice(0), 100001);
    CHECK(acl_test_double_violations() == v0 + 1, "call before aclInit is a violation");
    check_msg("aclInit");
    CHECK(aclGetRecentErrMsg() == NULL, "message is cleared after reading");
    CHECK_RC(aclInit(NULL), 0);
    CHECK_RC(aclInit(NULL), 100002);
    check_msg("aclInit");
    CHECK_RC(acl_test_double_live("initialized"), 1);
    void *p = NULL;
    v0 = acl_test_double_violations();
    CHECK_RC(aclrtMalloc(&p, 64, 0), 107002);
    CHECK(acl_test_double_violations() == v0 + 1, "malloc before SetDevice is a violation");
    check_msg("aclrtSetDevice");
    CHECK_RC(aclrtSetDevice(1), 100000);
    acl_test_double_set_device_count(2);
    CHECK_RC(aclrtSetDevice(1), 0);
    CHECK_RC(aclrtResetDevice(1), 0);
    acl_test_double_set_device_count(1);
    CHECK_RC(aclrtSetDevice(0), 0);
    CHECK_RC(acl_test_double_live("devices"), 1);
    aclrtContext ctx = NULL;
    CHECK_RC(aclrtCreateContext(&ctx, 0), 0);
    CHECK_RC(aclrtSetCurrentContext(ctx), 0);
    CHECK_RC(acl_test_double_live("contexts"), 1);
    CHECK_RC(aclrtDestroyContext(ctx), 0);
    v0 = acl_test_double_violations();
    CHECK_RC(aclrtDestroyContext(ctx), 100000);
    CHECK(acl_test_double_violations() == v0 + 1, "destroying an unknown context is a violation");
    check_msg("context");
    CHECK_RC(aclrtCreateStream(&g_st), 0);
    g_ws = dev_alloc(1024);
}

static void test_add_broadcast(void) {
    float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30}, out[6];
    int64_t da[2] = {2, 3}, db[1] = {3};
    void *pa = dev_from(a, sizeof a), *pb = dev_from(b, sizeof b), *po = dev_alloc(sizeof out);
    aclTensor *ta = mkt(da, 2, ACL_FLOAT, NULL, pa), *tb = mkt(db, 1, ACL_FLOAT, NULL, pb),
              *to = mkt(da, 2, ACL_FLOAT, NULL, po);
    float alpha = 2.0f;
    aclScalar *sa = aclCreateScalar(&alpha, ACL_FLOAT);
    uint64_t ws = 99;
    aclOpExecutor *ex = NULL;
    go("Add", aclnnAddGetWorkspaceSize(ta, tb, sa, to, &ws, &ex), &ws, &ex, aclnnAdd);
    CHECK(ws == 0, "Add workspace %llu", (unsigned long long)ws);
    to_host(out, po, sizeof out);
    double want[6] = {21, 42, 63, 24, 45, 66};
    check_floats("add", out, want, 6, 0);

    /* executor is consumed by the launch: relaunch is a violation */
    int64_t v0 = acl_test_double_violations();
    CHECK_RC(aclnnAdd(NULL, 0, ex, g_st), 161002);
    CHECK(acl_test_double_violations() == v0 + 1, "relaunch of a consumed executor is a violation");
    check_msg("not live");

    /* Sub with an integer alpha */
    int32_t ialpha = 3;
    aclScalar *si = aclCreateScalar(&ialpha, ACL_INT32);
    go("Sub", aclnnSubGetWorkspaceSize(ta, tb, si, to, &ws, &ex), &ws, &ex, aclnnSub);
    to_host(out, po, sizeof out);
    double want2[6] = {-29, -58, -87, -26, -55, -84};
    check_floats("sub", out, want2, 6, 0);

    /* Mul [2,1] x [1,3] -> [2,3]; Div */
    int64_t d21[2] = {2, 1}, d13[2] = {1, 3};
    aclTensor *t21 = mkt(d21, 2, ACL_FLOAT, NULL, pa), *t13 = mkt(d13, 2, ACL_FLOAT, NULL, pb);
    go("Mul", aclnnMulGetWorkspaceSize(t21, t13, to, &ws, &ex), &ws, &ex, aclnnMul);
    to_host(out, po, sizeof out);
    double want3[6] = {10, 20, 30, 20, 40, 60};
    check_floats("mul", out, want3, 6, 0);
    go("Div", aclnnDivGetWorkspaceSize(ta, tb, to, &ws, &ex), &ws, &ex, aclnnDiv);
    to_host(out, po, sizeof out);
    double want4[6] = {0.1, 0.1, 0.1, 0.4, 0.25, 0.2};
    check_floats("div", out, want4, 6, 1e-6);

    /* shape errors */
    int64_t d4[1] = {4};
    aclTensor *t4 = mkt(d4, 1, ACL_FLOAT, NULL, pa);
    CHECK_RC(aclnnAddGetWorkspaceSize(ta, t4, sa, to, &ws, &ex), 161002);
    CHECK(ex == NULL, "executor NULL on failure");
    check_msg("broadcast");
    CHECK_RC(aclnnAddGetWorkspaceSize(ta, tb, sa, t4, &ws, &ex), 161002);
    check_msg("does not match");
    CHECK_RC(aclnnAddGetWorkspaceSize(NULL, tb, sa, to, &ws, &ex), 161001);
    check_msg("self");
    aclTensor *tu = mkt(da, 2, ACL_UINT32, NULL, po);
    CHECK_RC(aclnnAddGetWorkspaceSize(ta, tb, sa, tu, &ws, &ex), 161002);
    check_msg("dtype");

    /* tensor data in a freed buffer at launch -> 361001 + violation */
    void *tmp = dev_alloc(sizeof out);
    aclTensor *tt = mkt(da, 2, ACL_FLOAT, NULL, tmp);
    CHECK_RC(aclnnAddGetWorkspaceSize(ta, tb, sa, tt, &ws, &ex), 0);
    CHECK_RC(aclrtFree(tmp), 0);
    v0 = acl_test_double_violations();
    CHECK_RC(aclnnAdd(NULL, 0, ex, g_st), 361001);
    CHECK(acl_test_double_violations() == v0 + 1, "launch on freed memory is a violation");
    check_msg("live device allocation");
    CHECK_RC(acl_test_double_live("executors"), 0);

    aclDestroyTensor(ta); aclDestroyTensor(tb); aclDestroyTensor(to); aclDestroyTensor(t21);
    aclDestroyTensor(t13); aclDestroyTensor(t4); aclDestroyTensor(tu); aclDestroyTensor(tt);
    aclDestroyScalar(sa); aclDestroyScalar(si);
    aclrtFree(pa); aclrtFree(pb); aclrtFree(po);
}

static void test_matmul(void) {
    /* M is a [3,2] row-major buffer; A = M^T is viewed as [2,3] with strides [1,2]. */
    float m[6] = {1, 2, 3, 4, 5, 6}, b[12], out[8];
    for (int i = 0; i < 12; i++) b[i] = (float)(i + 1) * 0.5f;
    int64_t dA[2] = {2, 3}, sA[2] = {1, 2}, dB[2] = {3, 4}, dO[2] = {2, 4};
    void *pm = dev_from(m, sizeof m), *pb = dev_from(b, sizeof b), *po = dev_alloc(sizeof out);
    aclTensor *ta = mkt(dA, 2, ACL_FLOAT, sA, pm), *tb = mkt(dB, 2, ACL_FLOAT, NULL, pb),
              *to = mkt(dO, 2, ACL_FLOAT, NULL, po);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    CHECK_RC(aclnnMatmulGetWorkspaceSize(ta, tb, to, 1, &ws, &ex), 0);
    CHECK(ws == 256, "matmul workspace %llu", (unsigned long long)ws);
    /* missing workspace -> violation + 161002 */
    int64_t v0 = acl_test_double_violations();
    CHECK_RC(aclnnMatmul(NULL, 0, ex, g_st), 161002);
    CHECK(acl_test_double_violations() == v0 + 1, "missing workspace is a violation");
    check_msg("workspace");
    go("Matmul", aclnnMatmulGetWorkspaceSize(ta, tb, to, 1, &ws, &ex), &ws, &ex, aclnnMatmul);
    to_host(out, po, sizeof out);
    double want[8];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) {
            double acc = 0;
            for (int k = 0; k < 3; k++) acc += (double)m[k * 2 + i] * b[k * 4 + j]; /* A[i][k] = M[k][i] */
            want[i * 4 + j] = acc;
        }
    check_floats("matmul", out, want, 8, 1e-6);
    /* inner dimension mismatch */
    CHECK_RC(aclnnMatmulGetWorkspaceSize(tb, tb, to, 1, &ws, &ex), 161002);
    check_msg("inner");
    aclDestroyTensor(ta); aclDestroyTensor(tb); aclDestroyTensor(to);
    aclrtFree(pm); aclrtFree(pb); aclrtFree(po);
}

static void test_unary_softmax(void) {
    float x[4] = {-1.0f, 0.0f, 1.0f, 4.0f}, out[4];
    int64_t d[1] = {4};
    void *px = dev_from(x, sizeof x), *po = dev_alloc(sizeof out);
    aclTensor *tx = mkt(d, 1, ACL_FLOAT, NULL, px), *to = mkt(d, 1, ACL_FLOAT, NULL, po);
    uint64_t ws;
    aclOpExecutor *ex;
    go("Relu", aclnnReluGetWorkspaceSize(tx, to, &ws, &ex), &ws, &ex, aclnnRelu);
    to_host(out, po, sizeof out);
    check_floats("relu", out, (double[]){0, 0, 1, 4}, 4, 0);
    go("Exp", aclnnExpGetWorkspaceSize(tx, to, &ws, &ex), &ws, &ex, aclnnExp);
    to_host(out, po, sizeof out);
    check_floats("exp", out, (double[]){0.36787944117, 1, 2.71828182846, 54.5981500331}, 4, 1e-6);
    go("Sigmoid", aclnnSigmoidGetWorkspaceSize(tx, to, &ws, &ex), &ws, &ex, aclnnSigmoid);
    to_host(out, po, sizeof out);
    check_floats("sigmoid", out, (double[]){0.26894142137, 0.5, 0.73105857863, 0.98201379004}, 4, 1e-6);
    go("Tanh", aclnnTanhGetWorkspaceSize(tx, to, &ws, &ex), &ws, &ex, aclnnTanh);
    to_host(out, po, sizeof out);
    check_floats("tanh", out, (double[]){-0.76159415596, 0, 0.76159415596, 0.99932929974}, 4, 1e-6);
    go("Neg", aclnnNegGetWorkspaceSize(tx, to, &ws, &ex), &ws, &ex, aclnnNeg);
    to_host(out, po, sizeof out);
    check_floats("neg", out, (double[]){1, 0, -1, -4}, 4, 0);
    go("Abs", aclnnAbsGetWorkspaceSize(tx, to, &ws, &ex), &ws, &ex, aclnnAbs);
    to_host(out, po, sizeof out);
    check_floats("abs", out, (double[]){1, 0, 1, 4}, 4, 0);
    /* sqrt of abs (out reused as input: aliasing of a different buffer) */
    aclTensor *tabs = mkt(d, 1, ACL_FLOAT, NULL, po);
    go("Sqrt", aclnnSqrtGetWorkspaceSize(tabs, to, &ws, &ex), &ws, &ex, aclnnSqrt);
    to_host(out, po, sizeof out);
    check_floats("sqrt", out, (double[]){1, 0, 1, 2}, 4, 1e-7);

    /* softmax over the last dim of [2,4] */
    float s[8] = {1, 2, 3, 4, -1, 0, 1, 100}, so[8];
    int64_t ds[2] = {2, 4};
    void *ps = dev_from(s, sizeof s), *pso = dev_alloc(sizeof so);
    aclTensor *ts = mkt(ds, 2, ACL_FLOAT, NULL, ps), *tso = mkt(ds, 2, ACL_FLOAT, NULL, pso);
    go("Softmax", aclnnSoftmaxGetWorkspaceSize(ts, -1, tso, &ws, &ex), &ws, &ex, aclnnSoftmax);
    to_host(so, pso, sizeof so);
    for (int r = 0; r < 2; r++) {
        double sum = 0;
        for (int c = 0; c < 4; c++) sum += so[r * 4 + c];
        CHECK(close_to(sum, 1.0, 1e-6), "softmax row %d sums to %.9g", r, sum);
    }
    CHECK(close_to(so[1] / so[0], 2.718281828, 1e-5), "softmax ratio %.9g", so[1] / so[0]);
    CHECK(close_to(so[7], 1.0, 1e-6), "softmax large value %.9g", so[7]);
    CHECK_RC(aclnnSoftmaxGetWorkspaceSize(ts, 2, tso, &ws, &ex), 161002);
    check_msg("dim");
    aclDestroyTensor(tx); aclDestroyTensor(to); aclDestroyTensor(tabs); aclDestroyTensor(ts); aclDestroyTensor(tso);
    aclrtFree(px); aclrtFree(po); aclrtFree(ps); aclrtFree(pso);
}

/* Casts the n elements at host `src` (dtype `from`, src_bytes bytes) to dtype `to` on the double
 * and copies them to host `dst` (dst_bytes bytes). With `refused` other than ACL_DT_UNDEFINED,
 * first checks that the same tensors refuse a cast to that dtype. */
static void cast_1d(const char *what, const void *src, size_t src_bytes, int from, void *dst, size_t dst_bytes,
                    int to, int64_t n, int refused) {
    uint64_t ws;
    aclOpExecutor *ex;
    int64_t d[1] = {n};
    void *ps = dev_from(src, src_bytes), *pd = dev_alloc(dst_bytes);
    aclTensor *ts = mkt(d, 1, from, NULL, ps), *td = mkt(d, 1, to, NULL, pd);
    if (refused != ACL_DT_UNDEFINED) {
        CHECK_RC(aclnnCastGetWorkspaceSize(ts, refused, td, &ws, &ex), 161002);
        check_msg("dtype");
    }
    go(what, aclnnCastGetWorkspaceSize(ts, to, td, &ws, &ex), &ws, &ex, aclnnCast);
    to_host(dst, pd, dst_bytes);
    aclDestroyTensor(ts); aclDestroyTensor(td);
    aclrtFree(ps); aclrtFree(pd);
}

static void test_cast(void) {
    /* f32 -> int32 (truncation toward zero, saturation, NaN -> 0); a cast to int8 is refused */
    float x[6] = {1.7f, -1.7f, 2.5f, -0.2f, 3e9f, __builtin_nanf("")};
    int32_t xi[6];
    cast_1d("Cast i32", x, sizeof x, ACL_FLOAT, xi, sizeof xi, ACL_INT32, 6, ACL_INT8);
    int32_t wi[6] = {1, -1, 2, 0, 2147483647, 0};
    for (int i = 0; i < 6; i++) CHECK(xi[i] == wi[i], "cast i32[%d] = %d, expected %d", i, xi[i], wi[i]);

    /* f32 -> f16 -> f32 */
    float h[9] = {1.0f, 0.1f, 65504.0f, 1e-7f, 2049.0f, 2051.0f, -2.5f, 65520.0f, 1e-8f}, back[9];
    uint16_t bits[9];
    cast_1d("Cast f16", h, sizeof h, ACL_FLOAT, bits, sizeof bits, ACL_FLOAT16, 9, ACL_DT_UNDEFINED);
    cast_1d("Cast f32", bits, sizeof bits, ACL_FLOAT16, back, sizeof back, ACL_FLOAT, 9, ACL_DT_UNDEFINED);
    uint16_t wb[9] = {0x3C00, 0x2E66, 0x7BFF, 0x0002, 0x6800, 0x6802, 0xC100, 0x7C00, 0x0000};
    for (int i = 0; i < 9; i++) CHECK(bits[i] == wb[i], "f16 bits[%d] = 0x%04x, expected 0x%04x", i, bits[i], wb[i]);
    double wback[9] = {1.0, 0.0999755859375, 65504.0, 1.1920928955078125e-07, 2048.0, 2052.0, -2.5, 0, 0.0};
    for (int i = 0; i < 9; i++) {
        if (i == 7) CHECK(back[i] > 3e38f, "f16 65520 should round to inf, got %g", back[i]);
        else CHECK(back[i] == (float)wback[i], "f32<-f16 [%d] = %.12g, expected %.12g", i, back[i], wback[i]);
    }

    /* f32 -> bf16 (round to nearest even) */
    float bfx[4] = {1.0f, 1.00390625f, 1.01171875f, -3.0f};
    uint16_t bfb[4];
    cast_1d("Cast bf16", bfx, sizeof bfx, ACL_FLOAT, bfb, sizeof bfb, ACL_BF16, 4, ACL_DT_UNDEFINED);
    uint16_t wbf[4] = {0x3F80, 0x3F80, 0x3F82, 0xC040};
    for (int i = 0; i < 4; i++) CHECK(bfb[i] == wbf[i], "bf16[%d] = 0x%04x, expected 0x%04x", i, bfb[i], wbf[i]);
}

static void test_permute(void) {
    float x[24], out[24];
    for (int i = 0; i < 24; i++) x[i] = (float)i;
    int64_t dx[3] = {2, 3, 4}, dout[3] = {4, 2, 3}, perm[3] = {-1, 0, 1};
    void *px = dev_from(x, sizeof x), *po = dev_alloc(sizeof out);
    aclTensor *tx = mkt(dx, 3, ACL_FLOAT, NULL, px), *to = mkt(dout, 3, ACL_FLOAT, NULL, po);
    aclIntArray *ap = aclCreateIntArray(perm, 3);
    uint64_t ws;
    aclOpExecutor *ex;
    go("Permute", aclnnPermuteGetWorkspaceSize(tx, ap, to, &ws, &ex), &ws, &ex, aclnnPermute);
    to_host(out, po, sizeof out);
    double want[24];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 3; k++) want[(i * 2 + j) * 3 + k] = x[(j * 3 + k) * 4 + i];
    check_floats("permute", out, want, 24, 0);
    int64_t bad[3] = {0, 0, 1};
    aclIntArray *abad = aclCreateIntArray(bad, 3);
    CHECK_RC(aclnnPermuteGetWorkspaceSize(tx, abad, to, &ws, &ex), 161002);
    check_msg("permutation");
    aclDestroyTensor(tx); aclDestroyTensor(to); aclDestroyIntArray(ap); aclDestroyIntArray(abad);
    aclrtFree(px); aclrtFree(po);
}

static void test_reductions(void) {
    float x[6] = {1, 2, 3, 4, 5, 6}, out[6];
    int64_t dx[2] = {2, 3}, d21[2] = {2, 1}, d2[1] = {2}, d3[1] = {3}, one = 1, zero = 0, minus1 = -1;
    void *px = dev_from(x, sizeof x), *po = dev_alloc(sizeof out);
    aclTensor *tx = mkt(dx, 2, ACL_FLOAT, NULL, px), *t21 = mkt(d21, 2, ACL_FLOAT, NULL, po),
              *t2 = mkt(d2, 1, ACL_FLOAT, NULL, po), *t3 = mkt(d3, 1, ACL_FLOAT, NULL, po),
              *t0 = mkt(NULL, 0, ACL_FLOAT, NULL, po);
    aclIntArray *a1 = aclCreateIntArray(&one, 1), *a0 = aclCreateIntArray(&zero, 1),
                *am1 = aclCreateIntArray(&minus1, 1), *aempty = aclCreateIntArray(NULL, 0);
    uint64_t ws = 0;
    aclOpExecutor *ex;
    go("ReduceSum keep", aclnnReduceSumGetWorkspaceSize(tx, a1, true, ACL_DT_UNDEFINED, t21, &ws, &ex), &ws, &ex,
       aclnnReduceSum);
    CHECK(ws == 256, "reduce workspace %llu", (unsigned long long)ws);
    to_host(out, po, 2 * sizeof(float));
    check_floats("sum keep", out, (double[]){6, 15}, 2, 0);
    go("ReduceSum", aclnnReduceSumGetWorkspaceSize(tx, a1, false, ACL_FLOAT, t2, &ws, &ex), &ws, &ex, aclnnReduceSum);
    to_host(out, po, 2 * sizeof(float));
    check_floats("sum", out, (double[]){6, 15}, 2, 0);
    CHECK_RC(aclnnReduceSumGetWorkspaceSize(tx, a1, true, ACL_FLOAT, t2, &ws, &ex), 161002);
    check_msg("does not match");
    go("ReduceSum all", aclnnReduceSumGetWorkspaceSize(tx, aempty, false, ACL_DT_UNDEFINED, t0, &ws, &ex), &ws, &ex,
       aclnnReduceSum);
    to_host(out, po, sizeof(float));
    check_floats("sum all", out, (double[]){21}, 1, 0);
    go("Mean", aclnnMeanGetWorkspaceSize(tx, a0, false, ACL_DT_UNDEFINED, t3, &ws, &ex), &ws, &ex, aclnnMean);
    to_host(out, po, 3 * sizeof(float));
    check_floats("mean", out, (double[]){2.5, 3.5, 4.5}, 3, 0);
    go("Amax", aclnnAmaxGetWorkspaceSize(tx, am1, false, t2, &ws, &ex), &ws, &ex, aclnnAmax);
    to_host(out, po, 2 * sizeof(float));
    check_floats("amax", out, (double[]){3, 6}, 2, 0);
    int64_t d13[2] = {1, 3};
    aclTensor *t13 = mkt(d13, 2, ACL_FLOAT, NULL, po);
    go("Amin", aclnnAminGetWorkspaceSize(tx, a0, true, t13, &ws, &ex), &ws, &ex, aclnnAmin);
    aclDestroyTensor(t13);
    to_host(out, po, 3 * sizeof(float));
    check_floats("amin", out, (double[]){1, 2, 3}, 3, 0);
    /* Amax over an empty reduced set */
    int64_t dz[2] = {2, 0};
    aclTensor *tz = mkt(dz, 2, ACL_FLOAT, NULL, px);
    CHECK_RC(aclnnAmaxGetWorkspaceSize(tz, a1, false, t2, &ws, &ex), 161002);
    check_msg("empty");
    aclDestroyTensor(tx); aclDestroyTensor(t21); aclDestroyTensor(t2); aclDestroyTensor(t3); aclDestroyTensor(t0);
    aclDestroyTensor(tz);
    aclDestroyIntArray(a1); aclDestroyIntArray(a0); aclDestroyIntArray(am1); aclDestroyIntArray(aempty);
    aclrtFree(px); aclrtFree(po);
}

/* Builds an Add(x, y) -> out executor whose descriptors are destroyed right away. */
static aclOpExecutor *add_exec(void *px, void *py, void *po, int64_t n) {
    int64_t d[1] = {n};
    aclTensor *tx = mkt(d, 1, ACL_FLOAT, NULL, px), *ty = mkt(d, 1, ACL_FLOAT, NULL, py),
              *to = mkt(d, 1, ACL_FLOAT, NULL, po);
    float one = 1.0f;
    aclScalar *s = aclCreateScalar(&one, ACL_FLOAT);
    uint64_t ws = 1;
    aclOpExecutor *ex = NULL;
    CHECK_RC(aclnnAddGetWorkspaceSize(tx, ty, s, to, &ws, &ex), 0);
    aclDestroyTensor(tx); aclDestroyTensor(ty); aclDestroyTensor(to); aclDestroyScalar(s);
    return ex;
}

static void test_capture(void) {
    float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40}, out[4], out2[4];
    double want[4] = {11, 22, 33, 44}, zeros[4] = {0, 0, 0, 0};
    void *px = dev_from(x, sizeof x), *py = dev_from(y, sizeof y), *po = dev_alloc(sizeof out),
         *po2 = dev_alloc(sizeof out2);
    int st = -1;
    aclmdlRI ri = NULL, info_ri = NULL;

    CHECK_RC(aclmdlRICaptureBegin(g_st, MODE_GLOBAL), 0);
    CHECK_RC(aclmdlRICaptureGetInfo(g_st, &st, &info_ri), 0);
    CHECK(st == STATUS_ACTIVE && info_ri != NULL, "GetInfo while capturing: status %d ri %p", st, info_ri);
    CHECK_RC(acl_test_double_live("capturing"), 1);
    int64_t v0 = acl_test_double_violations();
    CHECK_RC(aclmdlRICaptureBegin(g_st, MODE_GLOBAL), 507000);
    CHECK(acl_test_double_violations() == v0 + 1, "double CaptureBegin is a violation");
    check_msg("already capturing");
    aclOpExecutor *ex = add_exec(px, py, po, 4);
    CHECK_RC(aclnnAdd(NULL, 0, ex, g_st), 0);
    CHECK_RC(acl_test_double_live("executors"), 0);
    CHECK_RC(aclrtMemcpyAsync(po2, sizeof out2, po, sizeof out, D2D, g_st), 0);
    CHECK_RC(aclmdlRICaptureEnd(g_st, &ri), 0);
    CHECK(ri != NULL && ri == info_ri, "CaptureEnd returned %p (info said %p)", ri, info_ri);
    CHECK_RC(aclmdlRICaptureGetInfo(g_st, &st, &info_ri), 0);
    CHECK(st == STATUS_NONE && info_ri == NULL, "GetInfo after end: status %d ri %p", st, info_ri);
    CHECK(strstr(acl_test_double_log(), "aclnnAdd [captured] -> 0") != NULL, "log shows the captured launch");
    to_host(out, po, sizeof out);
    to_host(out2, po2, sizeof out2);
    check_floats("not executed during capture", out, zeros, 4, 0);
    check_floats("not executed during capture (copy)", out2, zeros, 4, 0);
    CHECK_RC(aclmdlRIExecuteAsync(ri, g_st), 0);
    CHECK_RC(aclrtSynchronizeStream(g_st), 0);
    to_host(out, po, sizeof out);
    to_host(out2, po2, sizeof out2);
    check_floats("replay 1", out, want, 4, 0);
    check_floats("replay 1 (copy)", out2, want, 4, 0);
    CHECK_RC(aclrtMemset(po, sizeof out, 0, sizeof out), 0);
    CHECK_RC(aclrtMemset(po2, sizeof out2, 0, sizeof out2), 0);
    CHECK_RC(aclmdlRIExecuteAsync(ri, g_st), 0);
    to_host(out, po, sizeof out);
    to_host(out2, po2, sizeof out2);
    check_floats("replay 2", out, want, 4, 0);
    check_floats("replay 2 (copy)", out2, want, 4, 0);
    CHECK_RC(acl_test_double_live("graphs"), 1);
    CHECK_RC(aclmdlRIDestroy(ri), 0);
    CHECK_RC(acl_test_double_live("graphs"), 0);
    v0 = acl_test_double_violations();
    CHECK_RC(aclmdlRIDestroy(ri), 100000);
    CHECK(acl_test_double_violations() == v0 + 1, "double RIDestroy is a violation");
    check_msg("graph");
    CHECK_RC(aclmdlRICaptureEnd(g_st, &ri), 507000);
    check_msg("not capturing");

    /* Malloc during capture: 507000, violation, capture invalidated, End fails */
    CHECK_RC(aclmdlRICaptureBegin(g_st, MODE_GLOBAL), 0);
    ex = add_exec(px, py, po, 4);
    CHECK_RC(aclnnAdd(NULL, 0, ex, g_st), 0);
    void *p = NULL;
    v0 = acl_test_double_violations();
    CHECK_RC(aclrtMalloc(&p, 16, 0), 507000);
    CHECK(acl_test_double_violations() == v0 + 1, "malloc during capture is a violation");
    {
        const char *m = aclGetRecentErrMsg();
        CHECK(m && strcmp(m, "aclrtMalloc is not allowed while stream capture is active") == 0, "message: %s",
              m ? m : "(null)");
    }
    CHECK_RC(aclmdlRICaptureGetInfo(g_st, &st, &info_ri), 0);
    CHECK(st == STATUS_INVALIDATED && info_ri == NULL, "GetInfo after illegal call: status %d", st);
    ri = (aclmdlRI)0x1;
    CHECK_RC(aclmdlRICaptureEnd(g_st, &ri), 507000);
    CHECK(ri == NULL, "invalidated capture gives no graph");
    check_msg("invalidated");
    CHECK_RC(acl_test_double_live("capturing"), 0);
    CHECK_RC(acl_test_double_live("graphs"), 0);

    /* Synchronous memcpy during capture is illegal too */
    CHECK_RC(aclmdlRICaptureBegin(g_st, MODE_GLOBAL), 0);
    CHECK_RC(aclrtMemcpy(out, sizeof out, po, sizeof out, D2H), 507000);
    check_msg("aclrtMemcpy is not allowed");
    CHECK_RC(aclmdlRICaptureEnd(g_st, &ri), 507000);
    check_msg(NULL);

    /* Pageable host memory in a captured async copy: illegal */
    CHECK_RC(aclmdlRICaptureBegin(g_st, MODE_GLOBAL), 0);
    v0 = acl_test_double_violations();
    CHECK_RC(aclrtMemcpyAsync(po, sizeof out, x, sizeof x, H2D, g_st), 507000);
    CHECK(acl_test_double_violations() == v0 + 1, "pageable memcpyAsync during capture is a violation");
    check_msg("pinned");
    CHECK_RC(aclmdlRICaptureEnd(g_st, &ri), 507000);
    check_msg(NULL);

    /* Pinned host memory in a captured async copy: replayed with the data current at replay time */
    float *hp = NULL;
    CHECK_RC(aclrtMallocHost((void **)&hp, sizeof x), 0);
    for (int i = 0; i < 4; i++) hp[i] = 1.0f;
    CHECK_RC(aclmdlRICaptureBegin(g_st, MODE_THREAD_LOCAL), 0);
    CHECK_RC(aclrtMemcpyAsync(po, sizeof out, hp, sizeof x, H2D, g_st), 0);
    CHECK_RC(aclmdlRICaptureEnd(g_st, &ri), 0);
    for (int i = 0; i < 4; i++) hp[i] = 7.0f;
    CHECK_RC(aclmdlRIExecuteAsync(ri, g_st), 0);
    to_host(out, po, sizeof out);
    check_floats("pinned replay", out, (double[]){7, 7, 7, 7}, 4, 0);
    CHECK_RC(aclmdlRIDestroy(ri), 0);
    CHECK_RC(aclrtFreeHost(hp), 0);

    /* RELAXED capture mode, and a RELAXED thread mode, allow unsafe calls */
    CHECK_RC(aclmdlRICaptureBegin(g_st, MODE_RELAXED), 0);
    CHECK_RC(aclrtMalloc(&p, 16, 0), 0);
    CHECK_RC(aclrtFree(p), 0);
    CHECK_RC(aclmdlRICaptureEnd(g_st, &ri), 0);
    CHECK_RC(aclmdlRIDestroy(ri), 0);
    int mode = MODE_RELAXED;
    CHECK_RC(aclmdlRICaptureThreadExchangeMode(&mode), 0);
    CHECK(mode == MODE_GLOBAL, "previous thread mode %d", mode);
    CHECK_RC(aclmdlRICaptureBegin(g_st, MODE_GLOBAL), 0);
    CHECK_RC(aclrtMalloc(&p, 16, 0), 0);
    CHECK_RC(aclrtFree(p), 0);
    CHECK_RC(aclmdlRICaptureEnd(g_st, &ri), 0);
    CHECK_RC(aclmdlRIDestroy(ri), 0);
    CHECK_RC(aclmdlRICaptureThreadExchangeMode(&mode), 0);
    CHECK(mode == MODE_RELAXED, "exchanged mode back: %d", mode);

    /* Replay after a captured buffer was freed: violation + 507000 */
    void *tmp = dev_alloc(sizeof out);
    CHECK_RC(aclmdlRICaptureBegin(g_st, MODE_GLOBAL), 0);
    ex = add_exec(px, py, tmp, 4);
    CHECK_RC(aclnnAdd(NULL, 0, ex, g_st), 0);
    CHECK_RC(aclmdlRICaptureEnd(g_st, &ri), 0);
    CHECK_RC(aclrtFree(tmp), 0);
    v0 = acl_test_double_violations();
    CHECK_RC(aclmdlRIExecuteAsync(ri, g_st), 507000);
    CHECK(acl_test_double_violations() == v0 + 1, "replay on freed memory is a violation");
    check_msg("live device allocation");
    CHECK_RC(aclmdlRIDestroy(ri), 0);

    aclrtFree(px); aclrtFree(py); aclrtFree(po); aclrtFree(po2);
}

static void test_misuse_and_faults(void) {
    int64_t v0 = acl_test_double_violations();
    void *p = dev_alloc(32);
    CHECK_RC(aclrtFree(p), 0);
    CHECK_RC(aclrtFree(p), 100000);
    CHECK(acl_test_double_violations() == v0 + 1, "double free is a violation");
    check_msg("double free");

    /* copy kind mismatches and bounds */
    char host[32] = {0}, host2[32];
    p = dev_alloc(32);
    v0 = acl_test_double_violations();
    CHECK_RC(aclrtMemcpy(host2, 32, host, 32, H2D), 100000);
    check_msg("HOST_TO_DEVICE");
    CHECK_RC(aclrtMemcpy(host2, 32, p, 32, H2H), 100000);
    check_msg("src");
    CHECK_RC(aclrtMemcpy(p, 16, host, 32, H2D), 100000);
    check_msg("destMax");
    CHECK_RC(aclrtMemcpy(p, 64, host, 64, H2D), 100000);
    check_msg("past the end");
    CHECK(acl_test_double_violations() == v0 + 4, "copy misuse is a violation (%lld)",
          (long long)(acl_test_double_violations() - v0));
    CHECK_RC(aclrtMemcpy(host2, 32, host, 32, H2H), 0);
    CHECK_RC(aclrtMemcpy(p, 32, host, 32, H2D), 0);

    /* fault injection */
    int64_t calls = acl_test_double_calls("aclrtMalloc");
    acl_test_double_fail_next("aclrtMalloc", 207001, "injected oom");
    void *q = NULL;
    v0 = acl_test_double_violations();
    CHECK_RC(aclrtMalloc(&q, 16, 0), 207001);
    {
        const char *m = aclGetRecentErrMsg();
        CHECK(m && strcmp(m, "injected oom") == 0, "injected message: %s", m ? m : "(null)");
    }
    CHECK(acl_test_double_violations() == v0, "injected failure is not a violation");
    CHECK_RC(aclrtMalloc(&q, 16, 0), 0);
    CHECK_RC(acl_test_double_calls("aclrtMalloc"), calls + 2);
    CHECK_RC(aclrtFree(q), 0);
    acl_test_double_fail_next("aclnnAddGetWorkspaceSize", 161002, "injected gws");
    {
        int64_t d[1] = {8};
        aclTensor *t = mkt(d, 1, ACL_FLOAT, NULL, p);
        float one = 1;
        aclScalar *s = aclCreateScalar(&one, ACL_FLOAT);
        uint64_t ws = 0;
        aclOpExecutor *ex = (aclOpExecutor *)0x1;
        CHECK_RC(aclnnAddGetWorkspaceSize(t, t, s, t, &ws, &ex), 161002);
        CHECK(ex == NULL, "injected GetWorkspaceSize failure leaves executor NULL");
        check_msg("injected gws");
        aclDestroyTensor(t);
        aclDestroyScalar(s);
        v0 = acl_test_double_violations();
        CHECK_RC(aclDestroyTensor(t), 161002);
        CHECK(acl_test_double_violations() == v0 + 1, "double tensor destroy is a violation");
        check_msg("aclTensor");
    }
    CHECK_RC(aclrtFree(p), 0);
    const char *log = acl_test_double_log();
    CHECK(strstr(log, "aclrtMalloc -> 0\n") != NULL, "log has aclrtMalloc -> 0");
    CHECK(strstr(log, "aclrtMalloc [injected] -> 207001\n") != NULL, "log has the injected failure");
    CHECK(strstr(log, "VIOLATION: aclrtFree:") != NULL, "log has violations");
}

static void test_cleanup_and_finalize(void) {
    CHECK_RC(aclrtFree(g_ws), 0);
    CHECK_RC(aclrtDestroyStream(g_st), 0);
    int64_t v0 = acl_test_double_violations();
    CHECK_RC(aclrtDestroyStream(g_st), 100000);
    CHECK(acl_test_double_violations() == v0 + 1, "destroying an unknown stream is a violation");
    check_msg("stream");
    static const char *const kinds[] = {"device_buffers", "host_buffers", "streams", "contexts", "graphs", "tensors",
                                        "scalars", "int_arrays", "executors", "capturing"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        CHECK(acl_test_double_live(kinds[i]) == 0, "live %s = %lld", kinds[i],
              (long long)acl_test_double_live(kinds[i]));
    CHECK_RC(aclrtResetDevice(0), 0);
    CHECK_RC(acl_test_double_live("devices"), 0);
    v0 = acl_test_double_violations();
    CHECK_RC(aclFinalize(), 0);
    CHECK(acl_test_double_violations() == v0, "clean finalize has no violation");
    CHECK_RC(acl_test_double_live("initialized"), 0);

    /* leaks at ResetDevice / aclFinalize are violations but not errors */
    CHECK_RC(aclInit(NULL), 0);
    CHECK_RC(aclrtSetDevice(0), 0);
    void *p = dev_alloc(8);
    v0 = acl_test_double_violations();
    CHECK_RC(aclrtResetDevice(0), 0);
    CHECK(acl_test_double_violations() == v0 + 1, "ResetDevice with live buffers is a violation");
    CHECK_RC(aclFinalize(), 0);
    CHECK(acl_test_double_violations() == v0 + 2, "aclFinalize with live buffers is a violation");
    CHECK(strstr(acl_test_double_log(), "VIOLATION: aclFinalize with 1 live device buffers") != NULL,
          "finalize violation text");
    CHECK_RC(aclrtFree(p), 100001);
    CHECK_RC(aclInit(NULL), 0);
    CHECK_RC(aclrtFree(p), 0);
    CHECK_RC(acl_test_double_live("device_buffers"), 0);
    CHECK_RC(aclFinalize(), 0);

    /* reset clears log, counts and violations */
    acl_test_double_fail_next("aclInit", 1, "never consumed");
    acl_test_double_reset();
    CHECK_RC(acl_test_double_violations(), 0);
    CHECK_RC(acl_test_double_calls("aclrtMalloc"), 0);
    CHECK(strcmp(acl_test_double_log(), "") == 0, "log cleared");
    CHECK_RC(aclInit(NULL), 0);
    CHECK_RC(aclFinalize(), 0);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        printf("usage: %s path/to/libacl_test_double.so\n", argv[0]);
        return 1;
    }
    load_lib(argv[1]);
    acl_test_double_reset();
    test_lifecycle();
    test_add_broadcast();
    test_matmul();
    test_unary_softmax();
    test_cast();
    test_permute();
    test_reductions();
    test_capture();
    test_misuse_and_faults();
    test_cleanup_and_finalize();
    if (g_failures) {
        printf("selftest FAILED: %d check(s) failed\n", g_failures);
        return 1;
    }
    printf("selftest ok\n");
    return 0;
}
