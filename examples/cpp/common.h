// Helpers shared by the C++ examples: checks that stop with the ES error message, a run on
// the CPU session, and comparing a float output.
#ifndef ES_EXAMPLES_CPP_COMMON_H_
#define ES_EXAMPLES_CPP_COMMON_H_
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "es_all_ops.h"
#include "../c/record.h"

inline void Check(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s: %s\n", what, es::GetLastErrorMessage().c_str());
    std::exit(1);
  }
}

inline es::TensorPtr Floats(const std::vector<float> &v, const std::vector<int64_t> &dims) {
  auto t = es::EsGraphBuilder::CreateTensor(v, dims, ge::DT_FLOAT);
  Check(t != nullptr, "CreateTensor");
  return t;
}

// Runs g once on a fresh session; with ES_EXAMPLE_OUT set, records the run (../c/record.h).
inline std::vector<es::TensorPtr> RunOnce(const EsCGraph *g, const std::vector<const EsCTensor *> &inputs) {
  es::Session session;
  Check(session.IsValid(), "Session");
  Check(session.AddGraph(1, g) == ES_SUCCESS, "AddGraph");
  std::vector<es::TensorPtr> outputs;
  Check(session.RunGraph(1, inputs, outputs) == ES_SUCCESS, "RunGraph");
  std::vector<EsCTensor *> raw;
  for (const auto &t : outputs) raw.push_back(t.get());
  es_record_run(g, inputs.data(), static_cast<int64_t>(inputs.size()), raw.data(), static_cast<int64_t>(raw.size()));
  return outputs;
}

inline void ExpectFloats(const es::TensorPtr &t, const std::vector<float> &want, const std::vector<int64_t> &dims,
                         const char *what) {
  Check(EsGetTensorDataType(t.get()) == C_DT_FLOAT, what);
  Check(std::vector<int64_t>(EsGetTensorDims(t.get()), EsGetTensorDims(t.get()) + EsGetTensorDimNum(t.get())) == dims,
        what);
  Check(EsGetTensorDataSize(t.get()) == static_cast<int64_t>(want.size() * sizeof(float)), what);
  const float *got = static_cast<const float *>(EsGetTensorData(t.get()));
  std::printf("%s:", what);
  for (size_t i = 0; i < want.size(); i++) {
    std::printf(" %g", got[i]);
    if (std::fabs(got[i] - want[i]) > 1e-5f) {
      std::fprintf(stderr, "\nFAILED: %s[%zu] = %g, want %g\n", what, i, got[i], want[i]);
      std::exit(1);
    }
  }
  std::printf("\n");
}
#endif
