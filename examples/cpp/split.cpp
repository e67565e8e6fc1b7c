// A dynamic output in C++: SplitD returns std::vector<EsTensorHolder> of y_num holders.
#include "common.h"

int main() {
  using namespace es;
  EsGraphBuilder b("split");
  EsTensorHolder x = b.CreateInput(0);
  std::vector<EsTensorHolder> parts = SplitD(x, /*y_num=*/3, /*split_dim=*/0, /*num_split=*/3);
  Check(parts.size() == 3, "SplitD");
  GraphPtr g = b.BuildAndReset(parts);
  Check(g != nullptr, "BuildAndReset");

  auto xt = Floats({1, 2, 3, 4, 5, 6}, {6});
  auto out = RunOnce(g.get(), {xt.get()});
  Check(out.size() == 3, "three outputs");
  for (int i = 0; i < 3; i++) {
    ExpectFloats(out[i], {float(2 * i + 1), float(2 * i + 2)}, {2}, "part");
  }
  return 0;
}
