/* An MLP layer: Relu(MatMulV2(x, w, bias) ) with attribute transpose_x2 and the optional
 * input bias given, offset_w left out (NULL); then a second layer without bias. */
#include "common.h"

int main(void) {
  EsCGraphBuilder *b = EsCreateGraphBuilder("mlp");
  EsCTensorHolder *x = EsCreateGraphInput(b, 0);
  const float w_values[] = {1, 0, 0, 1, 1, 1}; /* [3, 2], used transposed */
  const int64_t w_dims[] = {3, 2};
  EsCTensorHolder *w = EsCreateConstFloat(b, w_values, w_dims, 2);
  const float bias_values[] = {-2, 0, -4};
  EsCTensorHolder *bias = EsCreateVectorFloat(b, bias_values, 3);
  /* x1, x2, bias (optional), offset_w (optional: NULL), transpose_x1, transpose_x2, offset_x */
  EsCTensorHolder *h = EsRelu(EsMatMulV2(x, w, bias, NULL, false, true, 0));
  check(h != NULL, "first layer");
  const float w2_values[] = {1, 1, 1}; /* [3, 1] */
  const int64_t w2_dims[] = {3, 1};
  EsCTensorHolder *y = EsMatMulV2(h, EsCreateConstFloat(b, w2_values, w2_dims, 2), NULL, NULL, false, false, 0);
  check(y != NULL, "second layer");
  check(EsSetGraphOutput(h, 0) == ES_SUCCESS && EsSetGraphOutput(y, 1) == ES_SUCCESS, "outputs");
  EsCGraph *g = EsBuildGraphAndReset(b);
  check(g != NULL, "EsBuildGraphAndReset");
  EsDestroyGraphBuilder(b);

  const float xv[] = {1, 2, 3, 4};
  const int64_t x_dims[] = {2, 2};
  EsCTensor *xt = tensor_f32(xv, x_dims, 2);
  const EsCTensor *inputs[] = {xt};
  EsCTensor *out[2];
  check(run_once(g, inputs, 1, out, 2) == 2, "two outputs");
  /* x @ w^T = [[1,2,3],[3,4,7]]; + bias = [[-1,2,-1],[1,4,3]]; Relu = [[0,2,0],[1,4,3]] */
  const float want_h[] = {0, 2, 0, 1, 4, 3};
  const int64_t h_dims[] = {2, 3};
  expect_f32(out[0], want_h, h_dims, 2, "relu(x @ w^T + bias)");
  const float want_y[] = {2, 8};
  const int64_t y_dims[] = {2, 1};
  expect_f32(out[1], want_y, y_dims, 2, "second layer");
  EsDestroyEsCTensor(xt);
  EsDestroyGraph(g);
  return 0;
}
