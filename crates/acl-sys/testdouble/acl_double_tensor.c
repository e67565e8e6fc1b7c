/*
 * ACL test double: element types (load/store with conversion, half and bfloat16), tensor views
 * (strided gather/scatter, broadcasting) and the nnopbase descriptors (aclTensor, aclScalar,
 * aclIntArray).  See acl_double_internal.h.
 */
#include "acl_double_internal.h"

/* ------------------------------------------------------------------------------------------ */
/* Element types                                                                              */
/* ------------------------------------------------------------------------------------------ */

size_t dtype_size(int dt) {
    switch (dt) {
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
    case ACL_FLOAT16: case ACL_INT16: case ACL_UINT16: case ACL_BF16: return 2;
    case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
    case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: return 8;
    default: return 0;
    }
}

const char *dtype_name(int dt) {
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

int dtype_compute_ok(int dt) {
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

int64_t shape_numel(int nd, const int64_t *s) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= s[i];
    return n;
}

int64_t td_numel(const TD *t) { return shape_numel(t->ndim, t->dims); }

void fmt_shape(int nd, const int64_t *s, char *buf, size_t n) {
    size_t used = 0;
    used += (size_t)snprintf(buf + used, n - used, "[");
    for (int i = 0; i < nd && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%lld", i ? ", " : "", (long long)s[i]);
    if (used < n) snprintf(buf + used, n - used, "]");
}

int same_shape(int nd, const int64_t *s, const TD *t) {
    if (nd != t->ndim) return 0;
    for (int i = 0; i < nd; i++)
        if (s[i] != t->dims[i]) return 0;
    return 1;
}

/* numpy broadcasting of two shapes; 0 ok, -1 incompatible. */
int bcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nd, int64_t *out) {
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
int td_span(const TD *t, uintptr_t *lo, uintptr_t *hi) {
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
void gather(const TD *t, int nd, const int64_t *shape, double *dst) {
    int64_t st[MAXD];
    view_strides(t, nd, shape, st);
    size_t es = dtype_size(t->dtype);
    Walk w = walk_start(nd, shape, st, t->offset);
    for (int64_t i = 0, n = shape_numel(nd, shape); i < n; i++, walk_next(&w))
        dst[i] = load_elem(t->dtype, t->data + w.off * (int64_t)es);
}

/* Writes src (row-major over t's view) through t's strides, converting to t's dtype. */
void scatter(const TD *t, const double *src) {
    size_t es = dtype_size(t->dtype);
    Walk w = walk_start(t->ndim, t->dims, t->strides, t->offset);
    for (int64_t i = 0, n = td_numel(t); i < n; i++, walk_next(&w))
        store_elem(t->dtype, t->data + w.off * (int64_t)es, src[i]);
}

/* Copies the n elements of t's view to or from flat (row-major, t's dtype), unconverted. */
static void copy_view_bytes(const TD *t, char *flat, int to_view) {
    int64_t es = (int64_t)dtype_size(t->dtype);
    Walk w = walk_start(t->ndim, t->dims, t->strides, t->offset);
    for (int64_t i = 0, n = td_numel(t); i < n; i++, walk_next(&w)) {
        char *elem = t->data + w.off * es;
        if (to_view)
            memcpy(elem, flat + i * es, (size_t)es);
        else
            memcpy(flat + i * es, elem, (size_t)es);
    }
}

void gather_bytes(const TD *t, char *dst) { copy_view_bytes(t, dst, 0); }

void scatter_bytes(const TD *t, const char *src) { copy_view_bytes(t, (char *)src, 1); }

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

/* The aclDestroy* functions: p (argument arg) must be a live `what` of set; it leaves the set and
 * release frees it. */
static aclnnStatus destroy_live(const char *name, PtrSet *set, const void *p, const char *arg, const char *what,
                                void (*release)(void *)) {
    BEGIN(name);
    REQUIRE_INIT();
    if (!p) FAIL(ACLNN_ERR_PARAM_NULLPTR, "%s is NULL", arg);
    if (!ps_remove(set, p)) VIOL(ACLNN_ERR_PARAM_INVALID, "%p is not a live %s (double destroy?)", p, what);
    release((void *)p);
    FINISH();
    return rc_;
}

static void free_int_array(void *p) {
    free(((aclIntArray *)p)->v);
    free(p);
}

EXPORT aclnnStatus aclDestroyTensor(const aclTensor *tensor) {
    return destroy_live("aclDestroyTensor", &g_tensors, tensor, "tensor", "aclTensor", free);
}

EXPORT aclnnStatus aclDestroyScalar(const aclScalar *scalar) {
    return destroy_live("aclDestroyScalar", &g_scalars, scalar, "scalar", "aclScalar", free);
}

EXPORT aclnnStatus aclDestroyIntArray(const aclIntArray *array) {
    return destroy_live("aclDestroyIntArray", &g_arrays, array, "array", "aclIntArray", free_int_array);
}
