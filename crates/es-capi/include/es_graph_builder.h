// ge-rs ES C++ API: header-only wrappers over the C API (namespace es), as GE's
// es_graph_builder.h / es_tensor_holder.h. Every function is inline and calls the stable C
// layer, so the C++ API adds no ABI of its own. Hand-written.
//
// EsGraphBuilder owns the C builder (RAII); EsTensorHolder is a light handle that the builder
// owns. Built graphs, tensors and sessions are std::unique_ptr / RAII objects.
#ifndef ES_CAPI_ES_GRAPH_BUILDER_H_
#define ES_CAPI_ES_GRAPH_BUILDER_H_
#include <array>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#include "esb_funcs.h"
#include "es_Add_c.h"
#include "es_Div_c.h"
#include "es_Mul_c.h"
#include "es_Sub_c.h"

namespace es {

struct GraphDeleter {
  void operator()(EsCGraph *g) const { EsDestroyGraph(g); }
};
struct TensorDeleter {
  void operator()(EsCTensor *t) const { EsDestroyEsCTensor(t); }
};
/// A built graph, owned.
using GraphPtr = std::unique_ptr<EsCGraph, GraphDeleter>;
/// A tensor, owned (Tensor attributes, run inputs and outputs).
using TensorPtr = std::unique_ptr<EsCTensor, TensorDeleter>;

/// The message of the last failed ES call on this thread.
inline std::string GetLastErrorMessage() { return EsGetLastErrorMessage(); }

class EsGraphBuilder;

/// One output of a node; the builder that made it owns it.
class EsTensorHolder {
 public:
  EsTensorHolder() = default;
  EsTensorHolder(EsCTensorHolder *h) : h_(h) {}  // NOLINT: implicit, as GE's
  EsTensorHolder(std::nullptr_t) {}               // NOLINT: an absent optional input
  EsCTensorHolder *GetCTensorHolder() const { return h_; }
  bool IsValid() const { return h_ != nullptr; }
  explicit operator bool() const { return IsValid(); }

  uint32_t SetDataType(ge::DataType dt) const { return EsSetDataType(h_, static_cast<C_DataType>(dt)); }
  uint32_t SetFormat(ge::Format f) const { return EsSetFormat(h_, static_cast<C_Format>(f)); }
  uint32_t SetShape(const std::vector<int64_t> &shape) const {
    return EsSetShape(h_, shape.data(), static_cast<int64_t>(shape.size()));
  }
  /// GE's symbolic shape: not supported by ge-rs (ES_ERR_NOT_SUPPORTED, with a message).
  uint32_t SetOriginSymbolShape(const std::vector<const char *> &dims) const {
    return EsSetOriginSymbolShape(h_, dims.data(), static_cast<int64_t>(dims.size()));
  }
  /// The node producing this tensor (owned by the builder; nullptr on failure). GE returns a
  /// GNode; read ge-rs's with EsGetNodeName / EsGetNodeType.
  EsCNode *GetProducer() const { return EsGetProducer(h_); }
  /// Control edges from each of ctrl_ins to this tensor's producer.
  uint32_t AddControlEdge(const std::vector<EsTensorHolder> &ctrl_ins) const {
    std::vector<EsCTensorHolder *> v;
    for (const auto &t : ctrl_ins) v.push_back(t.h_);
    return EsAddControlEdge(h_, v.data(), static_cast<int64_t>(v.size()));
  }
  uint32_t SetAttr(const char *name, int64_t v) const { return EsSetInt64AttrForTensor(h_, name, v); }
  uint32_t SetAttr(const char *name, const char *v) const { return EsSetStringAttrForTensor(h_, name, v); }
  uint32_t SetAttr(const char *name, bool v) const { return EsSetBoolAttrForTensor(h_, name, v); }
  uint32_t SetNodeAttr(const char *name, int64_t v) const { return EsSetInt64AttrForNode(h_, name, v); }
  uint32_t SetNodeAttr(const char *name, const char *v) const { return EsSetStringAttrForNode(h_, name, v); }
  uint32_t SetNodeAttr(const char *name, bool v) const { return EsSetBoolAttrForNode(h_, name, v); }

 private:
  EsCTensorHolder *h_ = nullptr;
};

/// An operator input that is a tensor or a number/vector (the seed's EsTensorLike): a number
/// becomes a Const of the builder of the call's tensor inputs (floating-point: DT_FLOAT,
/// integers: DT_INT64). Operators with more than one input, not all dynamic, take them.
class EsTensorLike {
 public:
  EsTensorLike(const EsTensorHolder &t) : t_(t) {}  // NOLINT: implicit
  EsTensorLike(EsCTensorHolder *t) : t_(t) {}       // NOLINT
  EsTensorLike(std::nullptr_t) {}                   // NOLINT: an absent optional input
  EsTensorLike(int v) : kind_(kInt), i_(1, v) {}    // NOLINT
  EsTensorLike(int64_t v) : kind_(kInt), i_(1, v) {}  // NOLINT
  EsTensorLike(float v) : kind_(kFloat), f_(1, v) {}  // NOLINT
  EsTensorLike(double v) : kind_(kFloat), f_(1, static_cast<float>(v)) {}  // NOLINT
  EsTensorLike(const std::vector<int64_t> &v) : kind_(kInts), i_(v) {}     // NOLINT
  EsTensorLike(const std::vector<float> &v) : kind_(kFloats), f_(v) {}     // NOLINT
  /// The builder of a tensor input (nullptr for a number or an absent input).
  EsCGraphBuilder *Builder() const {
    return kind_ == kTensor && t_.IsValid() ? EsGetOwnerBuilder(t_.GetCTensorHolder()) : nullptr;
  }
  /// The tensor, or a new Const of `b` holding the number(s).
  EsCTensorHolder *ToTensorHolder(EsCGraphBuilder *b) const {
    switch (kind_) {
      case kInt: return EsCreateScalarInt64(b, i_[0]);
      case kFloat: return EsCreateScalarFloat(b, f_[0]);
      case kInts: return EsCreateVectorInt64(b, i_.data(), static_cast<int64_t>(i_.size()));
      case kFloats: return EsCreateVectorFloat(b, f_.data(), static_cast<int64_t>(f_.size()));
      default: return t_.GetCTensorHolder();
    }
  }

 private:
  enum Kind { kTensor, kInt, kFloat, kInts, kFloats };
  Kind kind_ = kTensor;
  EsTensorHolder t_;
  std::vector<int64_t> i_;
  std::vector<float> f_;
};

/// The graph builder (owns the C builder and, through it, every holder).
class EsGraphBuilder {
 public:
  explicit EsGraphBuilder(const char *name) : b_(EsCreateGraphBuilder(name)) {}
  ~EsGraphBuilder() { EsDestroyGraphBuilder(b_); }
  EsGraphBuilder(const EsGraphBuilder &) = delete;
  EsGraphBuilder &operator=(const EsGraphBuilder &) = delete;
  EsGraphBuilder(EsGraphBuilder &&o) noexcept : b_(o.b_) { o.b_ = nullptr; }
  EsGraphBuilder &operator=(EsGraphBuilder &&o) noexcept {
    std::swap(b_, o.b_);
    return *this;
  }
  EsCGraphBuilder *GetCGraphBuilder() const { return b_; }

  EsTensorHolder CreateInput(int64_t index) { return EsCreateGraphInput(b_, index); }
  EsTensorHolder CreateInput(int64_t index, const char *name) {
    return EsCreateGraphInputWithDetails(b_, index, name, nullptr, C_DT_FLOAT, C_FORMAT_ND, nullptr, 0);
  }
  EsTensorHolder CreateInput(int64_t index, const char *name, ge::DataType data_type, ge::Format format,
                             const std::vector<int64_t> &shape) {
    return EsCreateGraphInputWithDetails(b_, index, name, nullptr, static_cast<C_DataType>(data_type),
                                         static_cast<C_Format>(format), shape.data(),
                                         static_cast<int64_t>(shape.size()));
  }
  /// `inputs_num` inputs from `start_index` (for structured bindings).
  template <size_t inputs_num>
  std::array<EsTensorHolder, inputs_num> CreateInputs(size_t start_index = 0) {
    std::array<EsTensorHolder, inputs_num> rets;
    for (size_t i = 0; i < inputs_num; i++) rets[i] = CreateInput(static_cast<int64_t>(start_index + i));
    return rets;
  }
  std::vector<EsTensorHolder> CreateInputs(size_t inputs_num, size_t start_index = 0) {
    std::vector<EsTensorHolder> v;
    for (size_t i = 0; i < inputs_num; i++) v.push_back(CreateInput(static_cast<int64_t>(start_index + i)));
    return v;
  }
  EsTensorHolder CreateVariable(int32_t index, const char *name) { return EsCreateVariable(b_, index, name); }

  EsTensorHolder CreateConst(const std::vector<int64_t> &v, const std::vector<int64_t> &dims) {
    return EsCreateConstInt64(b_, v.data(), dims.data(), static_cast<int64_t>(dims.size()));
  }
  EsTensorHolder CreateConst(const std::vector<int32_t> &v, const std::vector<int64_t> &dims) {
    return EsCreateConstInt32(b_, v.data(), dims.data(), static_cast<int64_t>(dims.size()));
  }
  EsTensorHolder CreateConst(const std::vector<uint64_t> &v, const std::vector<int64_t> &dims) {
    return EsCreateConstUInt64(b_, v.data(), dims.data(), static_cast<int64_t>(dims.size()));
  }
  EsTensorHolder CreateConst(const std::vector<uint32_t> &v, const std::vector<int64_t> &dims) {
    return EsCreateConstUInt32(b_, v.data(), dims.data(), static_cast<int64_t>(dims.size()));
  }
  EsTensorHolder CreateConst(const std::vector<float> &v, const std::vector<int64_t> &dims) {
    return EsCreateConstFloat(b_, v.data(), dims.data(), static_cast<int64_t>(dims.size()));
  }
  EsTensorHolder CreateVector(const std::vector<int64_t> &v) {
    return EsCreateVectorInt64(b_, v.data(), static_cast<int64_t>(v.size()));
  }
  EsTensorHolder CreateVector(const std::vector<int32_t> &v) {
    return EsCreateVectorInt32(b_, v.data(), static_cast<int64_t>(v.size()));
  }
  EsTensorHolder CreateVector(const std::vector<float> &v) {
    return EsCreateVectorFloat(b_, v.data(), static_cast<int64_t>(v.size()));
  }
  EsTensorHolder CreateScalar(int64_t v) { return EsCreateScalarInt64(b_, v); }
  EsTensorHolder CreateScalar(int32_t v) { return EsCreateScalarInt32(b_, v); }
  EsTensorHolder CreateScalar(uint64_t v) { return EsCreateScalarUInt64(b_, v); }
  EsTensorHolder CreateScalar(uint32_t v) { return EsCreateScalarUInt32(b_, v); }
  EsTensorHolder CreateScalar(float v) { return EsCreateScalarFloat(b_, v); }

  /// A tensor (for Tensor attributes such as Const's value, and run inputs).
  template <typename T>
  static TensorPtr CreateTensor(const std::vector<T> &value, const std::vector<int64_t> &dims, ge::DataType dt,
                                ge::Format format = ge::FORMAT_ND) {
    return TensorPtr(EsCreateEsCTensor(value.data(), dims.data(), static_cast<int64_t>(dims.size()),
                                       static_cast<C_DataType>(dt), static_cast<C_Format>(format)));
  }

  uint32_t SetOutput(const EsTensorHolder &t, int64_t index) { return EsSetGraphOutput(t.GetCTensorHolder(), index); }
  uint32_t SetAttr(const char *name, int64_t v) { return EsSetInt64AttrForGraph(b_, name, v); }
  uint32_t SetAttr(const char *name, const char *v) { return EsSetStringAttrForGraph(b_, name, v); }
  uint32_t SetAttr(const char *name, bool v) { return EsSetBoolAttrForGraph(b_, name, v); }
  /// The graph (nullptr on failure: see GetLastErrorMessage); the builder starts afresh.
  GraphPtr BuildAndReset() { return GraphPtr(EsBuildGraphAndReset(b_)); }
  /// SetOutput for each of `outputs`, then BuildAndReset.
  GraphPtr BuildAndReset(const std::vector<EsTensorHolder> &outputs) {
    for (size_t i = 0; i < outputs.size(); i++) {
      if (SetOutput(outputs[i], static_cast<int64_t>(i)) != ES_SUCCESS) return nullptr;
    }
    return BuildAndReset();
  }

 private:
  EsCGraphBuilder *b_;
};

/// A session on the CPU (RAII).
class Session {
 public:
  explicit Session(const std::vector<std::pair<std::string, std::string>> &options = {}) {
    std::vector<const char *> k, v;
    for (const auto &o : options) {
      k.push_back(o.first.c_str());
      v.push_back(o.second.c_str());
    }
    s_ = EsCreateSession(k.data(), v.data(), static_cast<int64_t>(k.size()));
  }
  ~Session() { EsDestroySession(s_); }
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;
  bool IsValid() const { return s_ != nullptr; }
  uint32_t AddGraph(uint32_t id, const EsCGraph *g) { return EsSessionAddGraph(s_, id, g); }
  /// Runs graph `id`; the outputs go to `outputs`. Returns the status code.
  uint32_t RunGraph(uint32_t id, const std::vector<const EsCTensor *> &inputs, std::vector<TensorPtr> &outputs) {
    int64_t n = 0;
    uint32_t st = EsSessionRunGraph(s_, id, inputs.data(), static_cast<int64_t>(inputs.size()), nullptr, 0, &n);
    if (st != ES_SUCCESS && n == 0) return st;
    std::vector<EsCTensor *> raw(static_cast<size_t>(n), nullptr);
    st = EsSessionRunGraph(s_, id, inputs.data(), static_cast<int64_t>(inputs.size()), raw.data(), n, &n);
    outputs.clear();
    if (st == ES_SUCCESS) {
      for (auto *t : raw) outputs.emplace_back(t);
    }
    return st;
  }

 private:
  EsCSession *s_;
};

namespace detail {
inline std::vector<EsCTensorHolder *> Holders(const std::vector<EsTensorHolder> &v) {
  std::vector<EsCTensorHolder *> r;
  r.reserve(v.size());
  for (const auto &t : v) r.push_back(t.GetCTensorHolder());
  return r;
}
/// The builder of the first tensor among dynamic inputs.
inline EsCGraphBuilder *BuilderOf(const std::vector<EsTensorHolder> &v) {
  for (const auto &t : v) {
    if (t.IsValid()) return EsGetOwnerBuilder(t.GetCTensorHolder());
  }
  return nullptr;
}
inline EsCGraphBuilder *FirstBuilder(std::initializer_list<EsCGraphBuilder *> found) {
  for (auto *b : found) {
    if (b != nullptr) return b;
  }
  return nullptr;
}
inline std::vector<EsTensorHolder> Wrap(EsCTensorHolder **p, int64_t n) {
  std::vector<EsTensorHolder> r;
  for (int64_t i = 0; p != nullptr && i < n; i++) r.emplace_back(p[i]);
  return r;
}
inline std::vector<EsCGraph *> ReleaseGraphs(std::vector<GraphPtr> &v) {
  std::vector<EsCGraph *> r;
  for (auto &g : v) r.push_back(g.release());
  return r;
}
/// std::vector<uint8_t> (the seed's ListBool type) as a bool array.
struct Bools {
  explicit Bools(const std::vector<uint8_t> &v) : b(new bool[v.size() + 1]) {
    for (size_t i = 0; i < v.size(); i++) b[i] = v[i] != 0;
  }
  const bool *data() const { return b.get(); }
  std::unique_ptr<bool[]> b;
};
inline std::vector<C_DataType> CTypes(const std::vector<ge::DataType> &v) {
  std::vector<C_DataType> r;
  for (auto t : v) r.push_back(static_cast<C_DataType>(t));
  return r;
}
inline std::vector<const int64_t *> Rows(const std::vector<std::vector<int64_t>> &v) {
  std::vector<const int64_t *> r;
  for (const auto &row : v) r.push_back(row.data());
  return r;
}
inline std::vector<int64_t> RowSizes(const std::vector<std::vector<int64_t>> &v) {
  std::vector<int64_t> r;
  for (const auto &row : v) r.push_back(static_cast<int64_t>(row.size()));
  return r;
}
}  // namespace detail

/// `+ - * /` build Add, Sub, Mul and Div (the seed's operator table).
inline EsTensorHolder operator+(const EsTensorHolder &a, const EsTensorHolder &b) {
  return EsAdd(a.GetCTensorHolder(), b.GetCTensorHolder());
}
inline EsTensorHolder operator-(const EsTensorHolder &a, const EsTensorHolder &b) {
  return EsSub(a.GetCTensorHolder(), b.GetCTensorHolder());
}
inline EsTensorHolder operator*(const EsTensorHolder &a, const EsTensorHolder &b) {
  return EsMul(a.GetCTensorHolder(), b.GetCTensorHolder());
}
inline EsTensorHolder operator/(const EsTensorHolder &a, const EsTensorHolder &b) {
  return EsDiv(a.GetCTensorHolder(), b.GetCTensorHolder());
}

/// A number beside a tensor becomes a scalar Const of the tensor's builder (the seed's numeric
/// inputs): floating-point numbers as DT_FLOAT, integers as DT_INT64; GE's promotion decides
/// the result's type.
namespace detail {
template <typename T>
EsTensorHolder Scalar(const EsTensorHolder &like, T v) {
  EsCGraphBuilder *b = EsGetOwnerBuilder(like.GetCTensorHolder());
  if (std::is_floating_point<T>::value) return EsCreateScalarFloat(b, static_cast<float>(v));
  return EsCreateScalarInt64(b, static_cast<int64_t>(v));
}
template <typename T>
using IfNumber = typename std::enable_if<std::is_arithmetic<T>::value, EsTensorHolder>::type;
}  // namespace detail

#define ES_NUMBER_OPERATORS(op)                                     \
  template <typename T>                                             \
  detail::IfNumber<T> operator op(const EsTensorHolder &a, T b) {   \
    return a op detail::Scalar(a, b);                               \
  }                                                                 \
  template <typename T>                                             \
  detail::IfNumber<T> operator op(T a, const EsTensorHolder &b) {   \
    return detail::Scalar(b, a) op b;                               \
  }
ES_NUMBER_OPERATORS(+)
ES_NUMBER_OPERATORS(-)
ES_NUMBER_OPERATORS(*)
ES_NUMBER_OPERATORS(/)
#undef ES_NUMBER_OPERATORS

}  // namespace es
#endif
