// If in C++: the branches are GraphPtr arguments, moved into the call.
#include <utility>
#include "common.h"

static es::GraphPtr Branch(const char *name, bool relu) {
  es::EsGraphBuilder b(name);
  es::EsTensorHolder x = b.CreateInput(0, "x", ge::DT_FLOAT, ge::FORMAT_ND, {2});
  es::EsTensorHolder y = relu ? es::Relu(x) : x + b.CreateScalar(1.0f);
  es::GraphPtr g = b.BuildAndReset({y});
  Check(g != nullptr, name);
  return g;
}

int main() {
  using namespace es;
  EsGraphBuilder b("main");
  EsTensorHolder cond = b.CreateInput(0, "cond", ge::DT_BOOL, ge::FORMAT_ND, {});
  EsTensorHolder x = b.CreateInput(1, "x", ge::DT_FLOAT, ge::FORMAT_ND, {2});
  std::vector<EsTensorHolder> out = If(cond, {x}, /*output_num=*/1, Branch("then", true), Branch("else", false));
  Check(out.size() == 1, "If");
  GraphPtr g = b.BuildAndReset({out[0]});
  Check(g != nullptr, "BuildAndReset");

  auto xt = Floats({-1.5f, 2.0f}, {2});
  for (bool c : {true, false}) {
    bool cv = c;
    TensorPtr ct(EsCreateEsCTensor(&cv, nullptr, 0, C_DT_BOOL, C_FORMAT_ND));
    Check(ct != nullptr, "cond tensor");
    auto res = RunOnce(g.get(), {ct.get(), xt.get()});
    Check(res.size() == 1, "one output");
    ExpectFloats(res[0], c ? std::vector<float>{0, 2} : std::vector<float>{-0.5f, 3}, {2},
                 c ? "then (relu)" : "else (x + 1)");
  }
  return 0;
}
