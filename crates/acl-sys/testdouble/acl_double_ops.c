/*
 * ACL test double: the aclnn operators.  aclnn<Op>GetWorkspaceSize validates its arguments and
 * creates an executor; aclnn<Op> launches it (computed at once, or recorded while the stream
 * captures).  See acl_double_internal.h.
 */
#include "acl_double_internal.h"

/* ------------------------------------------------------------------------------------------ */
/* Executors                                                                                  */
/* ------------------------------------------------------------------------------------------ */

const char *const op_launch_names[OP_COUNT] = {
    "aclnnAdd", "aclnnSub", "aclnnMul", "aclnnDiv", "aclnnMatmul", "aclnnRelu", "aclnnExp",
    "aclnnSigmoid", "aclnnTanh", "aclnnSqrt", "aclnnNeg", "aclnnAbs", "aclnnSoftmax", "aclnnCast",
    "aclnnPermute", "aclnnReduceSum", "aclnnMean", "aclnnAmax", "aclnnAmin"};

void free_executor(aclOpExecutor *ex) { free(ex); }

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

/* 0 when p (argument arg) is a live object of set (a `what`), else an error. */
static int need_live(const char *FN, const PtrSet *set, const void *p, const char *arg, const char *what) {
    if (!p) return fail_(FN, ACLNN_ERR_PARAM_NULLPTR, 0, "%s is NULL", arg);
    if (!ps_has(set, p)) return fail_(FN, ACLNN_ERR_PARAM_INVALID, 1, "%s (%p) is not a live %s", arg, p, what);
    return 0;
}

static int get_td(const char *FN, const aclTensor *t, const char *arg, TD *td) {
    int rc = need_live(FN, &g_tensors, t, arg, "aclTensor");
    if (!rc) *td = t->td;
    return rc;
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
    return need_live(FN, &g_arrays, a, arg, "aclIntArray");
}

/* The checks of an operator on self into out: both live tensors of computable dtypes. */
static int get_self_out(const char *FN, const aclTensor *self, const aclTensor *out, TD *a, TD *o) {
    int rc = get_td(FN, self, "self", a);
    if (!rc) rc = get_td(FN, out, "out", o);
    if (!rc) rc = need_compute(FN, a, "self");
    if (!rc) rc = need_compute(FN, o, "out");
    return rc;
}

/* A new executor of op reading self (and other, when not NULL) and writing out. */
static aclOpExecutor *new_exec(int op, const TD *self, const TD *other, const TD *out) {
    aclOpExecutor *ex = xrealloc(NULL, sizeof *ex);
    memset(ex, 0, sizeof *ex);
    ex->op = op;
    ex->td[0] = *self;
    if (other) ex->td[1] = *other;
    ex->ntd = other ? 3 : 2;
    ex->td[ex->ntd - 1] = *out;
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
    if (has_alpha) TRY(need_live(FN, &g_scalars, alpha, "alpha", "aclScalar"));
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
        aclOpExecutor *ex = new_exec(op, &a, &b, &o);
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
    TRY(get_self_out(FN, self, out, &a, &o));
    TRY(need_same_shape(FN, &o, a.ndim, a.dims, "self"));
    {
        aclOpExecutor *ex = new_exec(op, &a, NULL, &o);
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
        aclOpExecutor *ex = new_exec(op, &a, NULL, &o);
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
        aclOpExecutor *ex = new_exec(OP_MATMUL, &a, &b, &o);
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
    TRY(get_self_out(FN, self, out, &a, &o));
    TRY(need_same_shape(FN, &o, a.ndim, a.dims, "self"));
    {
        int64_t d;
        if (norm_dim(dim, a.ndim, &d))
            FAIL(ACLNN_ERR_PARAM_INVALID, "dim %lld is out of range for rank %d", (long long)dim, a.ndim);
        aclOpExecutor *ex = new_exec(OP_SOFTMAX, &a, NULL, &o);
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
    TRY(get_self_out(FN, self, out, &a, &o));
    if ((int)dtype != o.dtype)
        FAIL(ACLNN_ERR_PARAM_INVALID, "dtype %s (%d) differs from out's dtype %s", dtype_name((int)dtype),
             (int)dtype, dtype_name(o.dtype));
    TRY(need_same_shape(FN, &o, a.ndim, a.dims, "self"));
    {
        aclOpExecutor *ex = new_exec(OP_CAST, &a, NULL, &o);
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
        aclOpExecutor *ex = new_exec(OP_PERMUTE, &a, NULL, &o);
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
            graph_push(s->cap_graph,
                       &(Task){.kind = TASK_OP, .ex = executor, .ws = workspace, .ws_size = workspaceSize});
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
