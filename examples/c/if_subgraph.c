/* If with two subgraphs: then = Relu(x), else = x + 1; run with cond true and false. */
#include "common.h"

/* A one-input branch built with its own builder. */
static EsCGraph *branch(const char *name, int relu) {
  EsCGraphBuilder *b = EsCreateGraphBuilder(name);
  const int64_t shape[] = {2};
  EsCTensorHolder *x = EsCreateGraphInputWithDetails(b, 0, NULL, NULL, C_DT_FLOAT, C_FORMAT_ND, shape, 1);
  EsCTensorHolder *y = relu ? EsRelu(x) : EsAdd(x, EsCreateScalarFloat(b, 1.0f));
  check(y != NULL && EsSetGraphOutput(y, 0) == ES_SUCCESS, name);
  EsCGraph *g = EsBuildGraphAndReset(b);
  check(g != NULL, name);
  EsDestroyGraphBuilder(b);
  return g;
}

int main(void) {
  EsCGraphBuilder *b = EsCreateGraphBuilder("main");
  EsCTensorHolder *cond = EsCreateGraphInputWithDetails(b, 0, "cond", NULL, C_DT_BOOL, C_FORMAT_ND, NULL, 0);
  const int64_t shape[] = {2};
  EsCTensorHolder *x = EsCreateGraphInputWithDetails(b, 1, "x", NULL, C_DT_FLOAT, C_FORMAT_ND, shape, 1);
  EsCTensorHolder *inputs[] = {x};
  /* cond, input + input_num, output_num, then_branch, else_branch: the branches now belong to ge-rs */
  EsIfOutput out = EsIf(cond, inputs, 1, 1, branch("then", 1), branch("else", 0));
  check(out.output != NULL && out.output_num == 1, "EsIf");
  check(EsSetGraphOutput(out.output[0], 0) == ES_SUCCESS, "EsSetGraphOutput");
  EsCGraph *g = EsBuildGraphAndReset(b);
  check(g != NULL, "EsBuildGraphAndReset");
  EsDestroyGraphBuilder(b);

  const float xv[] = {-1.5f, 2.0f};
  EsCTensor *xt = tensor_f32(xv, shape, 1);
  for (int c = 1; c >= 0; c--) {
    bool cv = c != 0;
    EsCTensor *ct = EsCreateEsCTensor(&cv, NULL, 0, C_DT_BOOL, C_FORMAT_ND);
    check(ct != NULL, "cond tensor");
    const EsCTensor *ins[] = {ct, xt};
    EsCTensor *res[1];
    check(run_once(g, ins, 2, res, 1) == 1, "one output");
    const float want_then[] = {0.0f, 2.0f}, want_else[] = {-0.5f, 3.0f};
    expect_f32(res[0], c ? want_then : want_else, shape, 1, c ? "then (relu)" : "else (x + 1)");
    EsDestroyEsCTensor(ct);
  }
  EsDestroyEsCTensor(xt);
  EsDestroyGraph(g);
  return 0;
}
