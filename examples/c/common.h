/* Helpers shared by the C examples: checks that stop with the ES error message, tensors,
 * one run on the CPU session. */
#ifndef ES_EXAMPLES_COMMON_H_
#define ES_EXAMPLES_COMMON_H_
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "es_all_ops_c.h"
#include "record.h"

/* Stops the program when `ok` is false, printing what failed and ES's last error. */
static void check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "FAILED: %s: %s\n", what, EsGetLastErrorMessage());
    exit(1);
  }
}

static EsCTensor *tensor_f32(const float *values, const int64_t *dims, int64_t dim_num) {
  EsCTensor *t = EsCreateEsCTensor(values, dims, dim_num, C_DT_FLOAT, C_FORMAT_ND);
  check(t != NULL, "EsCreateEsCTensor");
  return t;
}

/* Runs `graph` once on a fresh session; writes up to `capacity` outputs, returns their count.
 * With ES_EXAMPLE_OUT set, records the run (record.h). */
static int64_t run_once(const EsCGraph *graph, const EsCTensor *const *inputs, int64_t input_num,
                        EsCTensor **outputs, int64_t capacity) {
  const char *keys[] = {"ge.exec.deviceId"};
  const char *values[] = {"0"};
  EsCSession *s = EsCreateSession(keys, values, 1);
  check(s != NULL, "EsCreateSession");
  check(EsSessionAddGraph(s, 1, graph) == ES_SUCCESS, "EsSessionAddGraph");
  int64_t n = 0;
  check(EsSessionRunGraph(s, 1, inputs, input_num, outputs, capacity, &n) == ES_SUCCESS, "EsSessionRunGraph");
  EsDestroySession(s);
  es_record_run(graph, inputs, input_num, outputs, n);
  return n;
}

/* Checks a float output against the expected values and shape, then frees it. */
static void expect_f32(EsCTensor *t, const float *want, const int64_t *dims, int64_t dim_num, const char *what) {
  check(EsGetTensorDataType(t) == C_DT_FLOAT, what);
  check(EsGetTensorDimNum(t) == dim_num, what);
  int64_t n = 1;
  for (int64_t i = 0; i < dim_num; i++) {
    check(EsGetTensorDims(t)[i] == dims[i], what);
    n *= dims[i];
  }
  check(EsGetTensorDataSize(t) == n * (int64_t)sizeof(float), what);
  const float *got = (const float *)EsGetTensorData(t);
  printf("%s:", what);
  for (int64_t i = 0; i < n; i++) {
    printf(" %g", got[i]);
    if (fabsf(got[i] - want[i]) > 1e-5f) {
      fprintf(stderr, "\nFAILED: %s[%lld] = %g, want %g\n", what, (long long)i, got[i], want[i]);
      exit(1);
    }
  }
  printf("\n");
  EsDestroyEsCTensor(t);
}
#endif
