/*
 * ge-rs ES C API: the core (GE's esb_funcs.h, plus errors, graphs and sessions).
 * Hand-written; tests/generated_current.rs checks it declares exactly what libes_capi exports.
 *
 * Ownership: the builder owns every EsCTensorHolder (and every array of them) it hands out,
 * until EsDestroyGraphBuilder. The caller owns EsCGraphBuilder, EsCGraph, EsCTensor and
 * EsCSession objects it creates, except that an EsCGraph passed as a subgraph or an EsCTensor
 * passed as a Tensor attribute of an Es<Op> call belongs to ge-rs from that call on.
 *
 * Errors: functions returning uint32_t return ES_SUCCESS (0) or an ES_ERR_* code; functions
 * returning a pointer return NULL, and Es<Op> functions returning a struct return it zeroed.
 * EsGetLastErrorMessage() then says what went wrong (thread-local; "" after a success; the
 * destroy and free functions leave it as it was).
 */
#ifndef ES_CAPI_ESB_FUNCS_H_
#define ES_CAPI_ESB_FUNCS_H_
#include <stdbool.h>
#include <stdint.h>
#include "es_c_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct EsCTensorHolder EsCTensorHolder;
typedef struct EsCGraphBuilder EsCGraphBuilder;
typedef struct EsCTensor EsCTensor;
typedef struct EsCGraph EsCGraph;
typedef struct EsCSession EsCSession;
typedef struct EsCNode EsCNode;

#define ES_SUCCESS 0u
#define ES_ERR_INVALID_ARGUMENT 1u
#define ES_ERR_BUILD 2u
#define ES_ERR_NOT_SUPPORTED 3u
#define ES_ERR_IO 4u
#define ES_ERR_RUN 5u
#define ES_ERR_INTERNAL 6u

/* The message of the last failed ES call on this thread ("" when the last call succeeded);
 * valid until the next ES call on this thread. */
const char *EsGetLastErrorMessage(void);
/* The status code of the last ES call on this thread. */
uint32_t EsGetLastErrorCode(void);

/* ---- builder ---- */
/* A graph builder; name NULL gives "graph". */
EsCGraphBuilder *EsCreateGraphBuilder(const char *name);
/* Frees the builder and every holder it handed out. */
void EsDestroyGraphBuilder(EsCGraphBuilder *graph);
/* Checks and returns the graph (the caller frees it with EsDestroyGraph); the builder is left
 * empty, and the holders made before are of no further use. */
EsCGraph *EsBuildGraphAndReset(EsCGraphBuilder *graph);
/* The builder owning a holder (no new reference). */
EsCGraphBuilder *EsGetOwnerBuilder(EsCTensorHolder *tensor);
/* The node producing a holder, owned by the builder (one handle per node; of no further use
 * after EsBuildGraphAndReset, as holders). */
EsCNode *EsGetProducer(EsCTensorHolder *tensor);
/* A node's name and operator type (ge-rs's additions: GE's C API has no EsCNode accessors);
 * the strings live as long as the node handle. */
const char *EsGetNodeName(const EsCNode *node);
const char *EsGetNodeType(const EsCNode *node);

/* ---- inputs ---- */
/* Graph input `index` (Data node "input_<index>"), float, ND, shaped by the fed tensor. */
EsCTensorHolder *EsCreateGraphInput(EsCGraphBuilder *graph, int64_t index);
/* The seed's name for EsCreateGraphInput. */
EsCTensorHolder *EsCreateInput(EsCGraphBuilder *graph, int64_t index);
/* name NULL: "input_<index>"; type NULL: "Data" (or RefData, AippData, AnyData); shape NULL:
 * shaped by the fed tensor (a non-NULL shape with dim_num 0 is a scalar). */
EsCTensorHolder *EsCreateGraphInputWithDetails(EsCGraphBuilder *graph, int64_t index, const char *name,
                                               const char *type, C_DataType data_type, C_Format format,
                                               const int64_t *shape, int64_t dim_num);
EsCTensorHolder *EsCreateVariable(EsCGraphBuilder *graph, int32_t index, const char *name);
uint32_t EsSetDataType(EsCTensorHolder *tensor, C_DataType data_type);
uint32_t EsSetFormat(EsCTensorHolder *tensor, C_Format format);
uint32_t EsSetShape(EsCTensorHolder *tensor, const int64_t *shape, int64_t dim_num);
/* GE's symbolic shape: ge-rs has no symbolic shapes, so this checks its arguments and returns
 * ES_ERR_NOT_SUPPORTED ("not supported: EsSetOriginSymbolShape: ..."). */
uint32_t EsSetOriginSymbolShape(EsCTensorHolder *tensor, const char *const *shape, int64_t dim_num);

/* ---- constants (values are copied) ---- */
EsCTensorHolder *EsCreateConstInt64(EsCGraphBuilder *graph, const int64_t *value, const int64_t *dims, int64_t dim_num);
EsCTensorHolder *EsCreateConstInt32(EsCGraphBuilder *graph, const int32_t *value, const int64_t *dims, int64_t dim_num);
EsCTensorHolder *EsCreateConstUInt64(EsCGraphBuilder *graph, const uint64_t *value, const int64_t *dims,
                                     int64_t dim_num);
EsCTensorHolder *EsCreateConstUInt32(EsCGraphBuilder *graph, const uint32_t *value, const int64_t *dims,
                                     int64_t dim_num);
EsCTensorHolder *EsCreateConstFloat(EsCGraphBuilder *graph, const float *value, const int64_t *dims, int64_t dim_num);
EsCTensorHolder *EsCreateVectorInt64(EsCGraphBuilder *graph, const int64_t *value, int64_t dim);
EsCTensorHolder *EsCreateVectorInt32(EsCGraphBuilder *graph, const int32_t *value, int64_t dim);
EsCTensorHolder *EsCreateVectorUInt64(EsCGraphBuilder *graph, const uint64_t *value, int64_t dim);
EsCTensorHolder *EsCreateVectorUInt32(EsCGraphBuilder *graph, const uint32_t *value, int64_t dim);
EsCTensorHolder *EsCreateVectorFloat(EsCGraphBuilder *graph, const float *value, int64_t dim);
EsCTensorHolder *EsCreateScalarInt64(EsCGraphBuilder *graph, int64_t value);
EsCTensorHolder *EsCreateScalarInt32(EsCGraphBuilder *graph, int32_t value);
EsCTensorHolder *EsCreateScalarUInt64(EsCGraphBuilder *graph, uint64_t value);
EsCTensorHolder *EsCreateScalarUInt32(EsCGraphBuilder *graph, uint32_t value);
EsCTensorHolder *EsCreateScalarFloat(EsCGraphBuilder *graph, float value);

/* ---- outputs, control edges ---- */
uint32_t EsSetGraphOutput(EsCTensorHolder *tensor, int64_t output_index);
/* The seed's name for EsSetGraphOutput. */
uint32_t EsSetOutput(EsCTensorHolder *tensor, int64_t output_index);
uint32_t EsAddControlEdge(EsCTensorHolder *dest_ctrl_tensor, EsCTensorHolder **src_ctrl_tensors,
                          int64_t ctrl_tensors_num);

/* ---- private attributes ---- */
uint32_t EsSetInt64AttrForGraph(EsCGraphBuilder *graph, const char *attr_name, int64_t value);
uint32_t EsSetStringAttrForGraph(EsCGraphBuilder *graph, const char *attr_name, const char *value);
uint32_t EsSetBoolAttrForGraph(EsCGraphBuilder *graph, const char *attr_name, bool value);
uint32_t EsSetInt64AttrForTensor(EsCTensorHolder *tensor, const char *attr_name, int64_t value);
uint32_t EsSetStringAttrForTensor(EsCTensorHolder *tensor, const char *attr_name, const char *value);
uint32_t EsSetBoolAttrForTensor(EsCTensorHolder *tensor, const char *attr_name, bool value);
uint32_t EsSetInt64AttrForNode(EsCTensorHolder *tensor, const char *attr_name, int64_t value);
uint32_t EsSetStringAttrForNode(EsCTensorHolder *tensor, const char *attr_name, const char *value);
uint32_t EsSetBoolAttrForNode(EsCTensorHolder *tensor, const char *attr_name, bool value);

/* ---- tensors (owned by the caller) ---- */
EsCTensor *EsCreateEsCTensor(const void *data, const int64_t *dim, int64_t dim_num, C_DataType data_type,
                             C_Format format);
EsCTensor *EsCreateEsCTensorFromFile(const char *data_file_path, const int64_t *dim, int64_t dim_num,
                                     C_DataType data_type, C_Format format);
void EsDestroyEsCTensor(EsCTensor *tensor);
C_DataType EsGetTensorDataType(const EsCTensor *tensor);
int64_t EsGetTensorDimNum(const EsCTensor *tensor);
const int64_t *EsGetTensorDims(const EsCTensor *tensor);
const void *EsGetTensorData(const EsCTensor *tensor);
int64_t EsGetTensorDataSize(const EsCTensor *tensor);

/* ---- graphs (owned by the caller) ---- */
#define ES_DUMP_TXT 1
#define ES_DUMP_READABLE 2
void EsDestroyGraph(EsCGraph *graph);
uint32_t EsGraphSaveToFile(const EsCGraph *graph, const char *path);
EsCGraph *EsGraphLoadFromFile(const char *path);
uint32_t EsGraphSerialize(const EsCGraph *graph, uint8_t **data, int64_t *size);
EsCGraph *EsGraphDeserialize(const uint8_t *data, int64_t size);
void EsFreeBuffer(uint8_t *data, int64_t size);
/* format: ES_DUMP_READABLE or ES_DUMP_TXT; free the text with EsFreeString. */
char *EsGraphDumpToString(const EsCGraph *graph, int32_t format);
void EsFreeString(char *s);

/* ---- sessions (the CPU) ---- */
EsCSession *EsCreateSession(const char *const *keys, const char *const *values, int64_t option_num);
void EsDestroySession(EsCSession *session);
/* Adds a copy of graph (the caller keeps it). */
uint32_t EsSessionAddGraph(EsCSession *session, uint32_t graph_id, const EsCGraph *graph);
/* Runs a graph; *output_num gets the output count, outputs[i] new tensors the caller frees.
 * Fails without writing outputs when output_capacity is too small. */
uint32_t EsSessionRunGraph(EsCSession *session, uint32_t graph_id, const EsCTensor *const *inputs,
                           int64_t input_num, EsCTensor **outputs, int64_t output_capacity, int64_t *output_num);

#ifdef __cplusplus
}
#endif
#endif
