/* Built against the 8.0.0 library's headers: ReduceSum without noop_with_empty_axes, TopKV2
 * without indices_dtype, BatchMatMulV2 without offset_w (all added in 8.1.0). Run against a
 * library built from the current registry, the calls reach the 8.0.0 signatures' symbols. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "es_all_ops_c.h"

static void check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "FAILED: %s: %s\n", what, EsGetLastErrorMessage());
    exit(1);
  }
}

int main(void) {
  EsCGraphBuilder *b = EsCreateGraphBuilder("old");
  const int64_t shape[] = {2, 2};
  EsCTensorHolder *x = EsCreateGraphInputWithDetails(b, 0, NULL, NULL, C_DT_FLOAT, C_FORMAT_ND, shape, 2);
  const int64_t axis = 1;
  EsCTensorHolder *sum = EsReduceSum(x, EsCreateVectorInt64(b, &axis, 1), false);
  check(sum != NULL, "EsReduceSum (8.0.0)");
  EsTopKV2Output top = EsTopKV2(x, EsCreateScalarInt32(b, 1), true, -1, true);
  check(top.values != NULL && top.indices != NULL, "EsTopKV2 (8.0.0)");
  EsCTensorHolder *mm = EsBatchMatMulV2(x, x, NULL, false, true, 0);
  check(mm != NULL, "EsBatchMatMulV2 (8.0.0)");
  check(EsSetGraphOutput(sum, 0) == ES_SUCCESS && EsSetGraphOutput(top.values, 1) == ES_SUCCESS &&
            EsSetGraphOutput(mm, 2) == ES_SUCCESS,
        "outputs");
  EsCGraph *g = EsBuildGraphAndReset(b);
  check(g != NULL, "EsBuildGraphAndReset");
  EsDestroyGraphBuilder(b);

  const float xv[] = {1, 2, 3, 4};
  EsCTensor *xt = EsCreateEsCTensor(xv, shape, 2, C_DT_FLOAT, C_FORMAT_ND);
  EsCSession *s = EsCreateSession(NULL, NULL, 0);
  check(s != NULL && EsSessionAddGraph(s, 1, g) == ES_SUCCESS, "session");
  const EsCTensor *ins[] = {xt};
  EsCTensor *outs[3];
  int64_t n = 0;
  check(EsSessionRunGraph(s, 1, ins, 1, outs, 3, &n) == ES_SUCCESS && n == 3, "run");
  const float want_sum[] = {3, 7}, want_top[] = {2, 4}, want_mm[] = {5, 11, 11, 25};
  const float *wants[] = {want_sum, want_top, want_mm};
  const int64_t counts[] = {2, 2, 4};
  for (int i = 0; i < 3; i++) {
    const float *got = (const float *)EsGetTensorData(outs[i]);
    check(EsGetTensorDataSize(outs[i]) == counts[i] * (int64_t)sizeof(float), "output size");
    printf("output %d:", i);
    for (int64_t j = 0; j < counts[i]; j++) {
      printf(" %g", got[j]);
      check(fabsf(got[j] - wants[i][j]) < 1e-5f, "output value");
    }
    printf("\n");
    EsDestroyEsCTensor(outs[i]);
  }
  EsDestroyEsCTensor(xt);
  EsDestroySession(s);
  EsDestroyGraph(g);
  return 0;
}
