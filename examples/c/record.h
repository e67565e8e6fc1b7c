/* Recording the examples' runs, for tests/capi (C and C++ examples both include it).
 *
 * When the environment variable ES_EXAMPLE_OUT names a directory, each run of a graph leaves
 * there, numbered from 0 in the order of the runs:
 *   graph<k>.ge          the graph (EsGraphSaveToFile: Python's ge.graph.Graph.load reads it)
 *   graph<k>_in<i>.npy   its inputs, graph<k>_out<i>.npy its outputs (numpy's .npy format)
 * tests/capi/test_examples_match_python.py builds the same graphs with the Python API, runs
 * them on the same inputs and compares. Without ES_EXAMPLE_OUT nothing is written. */
#ifndef ES_EXAMPLES_RECORD_H_
#define ES_EXAMPLES_RECORD_H_
#include <stdio.h>
#include <stdlib.h>
#include "esb_funcs.h"

/* numpy's type string of a data type; NULL for one the examples do not use. */
static const char *es_record_descr(C_DataType dt) {
  switch (dt) {
    case C_DT_FLOAT: return "<f4";
    case C_DT_FLOAT16: return "<f2";
    case C_DT_DOUBLE: return "<f8";
    case C_DT_INT8: return "|i1";
    case C_DT_INT16: return "<i2";
    case C_DT_INT32: return "<i4";
    case C_DT_INT64: return "<i8";
    case C_DT_UINT8: return "|u1";
    case C_DT_UINT16: return "<u2";
    case C_DT_UINT32: return "<u4";
    case C_DT_UINT64: return "<u8";
    case C_DT_BOOL: return "|b1";
    default: return NULL;
  }
}

/* Writes `t` to `path` as a .npy file (version 1.0, C order); 0 on success. */
static int es_record_npy(const char *path, const EsCTensor *t) {
  const char *descr = es_record_descr(EsGetTensorDataType(t));
  if (descr == NULL) return -1;
  char shape[512];
  int len = 0;
  const int64_t *dims = EsGetTensorDims(t);
  int64_t dim_num = EsGetTensorDimNum(t);
  for (int64_t i = 0; i < dim_num && len < 400; i++) {
    len += snprintf(shape + len, sizeof shape - (size_t)len, "%lld,%s", (long long)dims[i], i + 1 < dim_num ? " " : "");
  }
  shape[len] = '\0';
  char header[640];
  int n = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, shape);
  /* Magic (6) + version (2) + length (2) + header, padded with spaces to a multiple of 64 and
   * ended by a newline. */
  int total = (10 + n + 1 + 63) / 64 * 64;
  while (10 + n + 1 < total) header[n++] = ' ';
  header[n++] = '\n';
  FILE *f = fopen(path, "wb");
  if (f == NULL) return -1;
  const unsigned char magic[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(n & 0xff),
                                   (unsigned char)(n >> 8)};
  size_t size = (size_t)EsGetTensorDataSize(t);
  int ok = fwrite(magic, 1, 10, f) == 10 && fwrite(header, 1, (size_t)n, f) == (size_t)n &&
           (size == 0 || fwrite(EsGetTensorData(t), 1, size, f) == size);
  return fclose(f) == 0 && ok ? 0 : -1;
}

/* Records one run (see the top of the file); stops the program when a file cannot be written. */
static void es_record_run(const EsCGraph *graph, const EsCTensor *const *inputs, int64_t input_num,
                          EsCTensor *const *outputs, int64_t output_num) {
  static int run = 0;
  const char *dir = getenv("ES_EXAMPLE_OUT");
  if (dir == NULL || *dir == '\0') return;
  char path[4096];
  snprintf(path, sizeof path, "%s/graph%d.ge", dir, run);
  int ok = EsGraphSaveToFile(graph, path) == ES_SUCCESS;
  for (int64_t i = 0; ok && i < input_num + output_num; i++) {
    int is_input = i < input_num;
    snprintf(path, sizeof path, "%s/graph%d_%s%lld.npy", dir, run, is_input ? "in" : "out",
             (long long)(is_input ? i : i - input_num));
    ok = es_record_npy(path, is_input ? inputs[i] : outputs[i - input_num]) == 0;
  }
  if (!ok) {
    fprintf(stderr, "FAILED: recording run %d in %s: %s\n", run, dir, EsGetLastErrorMessage());
    exit(1);
  }
  run++;
}
#endif
