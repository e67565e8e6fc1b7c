/*
 * ACL test double: the operators computed on the host, in double precision (run_exec), and the
 * check that an executor's buffers are live device memory when it runs.  See acl_double_internal.h.
 */
#include "acl_double_internal.h"

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

void run_exec(const aclOpExecutor *ex) {
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
        int64_t ost[MAXD];
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
        Walk w = walk_start(s->ndim, s->dims, ost, 0); /* w.off: the output element */
        for (int64_t i = 0; i < ns; i++, walk_next(&w)) {
            double x = a[i];
            int64_t o = w.off;
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
int exec_mem_check(const aclOpExecutor *ex, const void *ws, uint64_t ws_size, char *why, size_t whylen) {
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
