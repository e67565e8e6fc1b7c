/* The seed's add graph: two inputs, Add, one output; run on [1,2,3] and [10,20,30]. */
#include "common.h"

int main(void) {
  EsCGraphBuilder *builder = EsCreateGraphBuilder("graph_name");
  EsCTensorHolder *data0 = EsCreateInput(builder, 0);
  EsCTensorHolder *data1 = EsCreateInput(builder, 1);
  EsCTensorHolder *add = EsAdd(data0, data1);
  check(add != NULL, "EsAdd");
  EsCNode *producer = EsGetProducer(add);
  check(producer != NULL, "EsGetProducer");
  printf("producer: %s %s\n", EsGetNodeType(producer), EsGetNodeName(producer));
  check(EsSetOutput(add, 0) == ES_SUCCESS, "EsSetOutput");
  /* Errors come back as codes and messages, never as crashes. */
  check(EsAdd(data0, NULL) == NULL, "EsAdd with a NULL input must fail");
  printf("expected error: %s\n", EsGetLastErrorMessage());
  EsCGraph *graph = EsBuildGraphAndReset(builder);
  check(graph != NULL, "EsBuildGraphAndReset");
  EsDestroyGraphBuilder(builder);

  /* The graph survives a save/load round trip and dumps as text. */
  uint8_t *bytes = NULL;
  int64_t size = 0;
  check(EsGraphSerialize(graph, &bytes, &size) == ES_SUCCESS && size > 0, "EsGraphSerialize");
  EsCGraph *copy = EsGraphDeserialize(bytes, size);
  check(copy != NULL, "EsGraphDeserialize");
  EsFreeBuffer(bytes, size);
  char *text = EsGraphDumpToString(copy, ES_DUMP_READABLE);
  check(text != NULL, "EsGraphDumpToString");
  printf("%s\n", text);
  EsFreeString(text);

  const int64_t dims[] = {3};
  const float a[] = {1, 2, 3}, b[] = {10, 20, 30}, want[] = {11, 22, 33};
  EsCTensor *x = tensor_f32(a, dims, 1), *y = tensor_f32(b, dims, 1);
  const EsCTensor *inputs[] = {x, y};
  EsCTensor *out[1];
  check(run_once(copy, inputs, 2, out, 1) == 1, "one output");
  expect_f32(out[0], want, dims, 1, "add");
  EsDestroyEsCTensor(x);
  EsDestroyEsCTensor(y);
  EsDestroyGraph(copy);
  EsDestroyGraph(graph);
  return 0;
}
