/* A dynamic output: SplitD of a [6] input into 3 parts (y_num = 3), each part an output. */
#include "common.h"

int main(void) {
  EsCGraphBuilder *b = EsCreateGraphBuilder("split");
  EsCTensorHolder *x = EsCreateGraphInput(b, 0);
  /* x, y_num (the dynamic output's count), split_dim, num_split */
  EsSplitDOutput parts = EsSplitD(x, 3, 0, 3);
  check(parts.y != NULL && parts.y_num == 3, "EsSplitD");
  for (int64_t i = 0; i < parts.y_num; i++) {
    check(EsSetGraphOutput(parts.y[i], i) == ES_SUCCESS, "EsSetGraphOutput");
  }
  /* A wrong count is refused with a message. */
  EsSplitDOutput bad = EsSplitD(x, 2, 0, 3);
  check(bad.y == NULL && bad.y_num == 0, "EsSplitD with y_num 2 must fail");
  printf("expected error: %s\n", EsGetLastErrorMessage());
  EsCGraph *g = EsBuildGraphAndReset(b);
  check(g != NULL, "EsBuildGraphAndReset");
  EsDestroyGraphBuilder(b);

  const float xv[] = {1, 2, 3, 4, 5, 6};
  const int64_t dims[] = {6}, part_dims[] = {2};
  EsCTensor *xt = tensor_f32(xv, dims, 1);
  const EsCTensor *ins[] = {xt};
  EsCTensor *outs[3];
  check(run_once(g, ins, 1, outs, 3) == 3, "three outputs");
  for (int i = 0; i < 3; i++) {
    expect_f32(outs[i], xv + 2 * i, part_dims, 1, "part");
  }
  EsDestroyEsCTensor(xt);
  EsDestroyGraph(g);
  return 0;
}
