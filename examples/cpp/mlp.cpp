// An MLP in C++: MatMulV2 with the optional input bias and offset_w left out (nullptr),
// attributes after the required ones with defaults (transpose_x2 given, offset_x defaulted),
// Relu, operator* and operator- with numbers on the way; numbers as operator inputs.
#include "common.h"

int main() {
  using namespace es;
  EsGraphBuilder b("mlp");
  EsTensorHolder x = b.CreateInput(0);
  EsTensorHolder w = b.CreateConst(std::vector<float>{1, 0, 0, 1, 1, 1}, {3, 2});
  // The bias is given as numbers: they become a Const of x's builder (the seed's EsTensorLike).
  EsTensorHolder h =
      Relu(MatMulV2(x, w, std::vector<float>{-2, 0, -4}, nullptr, /*transpose_x1=*/false, /*transpose_x2=*/true));
  EsTensorHolder y = MatMulV2(h, b.CreateConst(std::vector<float>{1, 1, 1}, {3, 1}), nullptr, nullptr);
  EsTensorHolder z = y * 2.0f - 1;  // numbers become scalar Consts of y's builder
  EsTensorHolder u = 10 / (z + 2.0);
  // BatchMatMulV2 gained the optional input offset_w in 8.1.0; a call written for 8.0.0
  // (without it) still compiles: the seed's compatibility overload.
  EsTensorHolder v = BatchMatMulV2(x, w, nullptr, /*adj_x1=*/false, /*adj_x2=*/true);
  Check(h.IsValid() && y.IsValid() && z.IsValid() && u.IsValid() && v.IsValid(), "layers");
  GraphPtr g = b.BuildAndReset({h, z, u, v});
  Check(g != nullptr, "BuildAndReset");

  auto xt = Floats({1, 2, 3, 4}, {2, 2});
  auto out = RunOnce(g.get(), {xt.get()});
  Check(out.size() == 4, "four outputs");
  ExpectFloats(out[0], {0, 2, 0, 1, 4, 3}, {2, 3}, "relu(x @ w^T + bias)");
  ExpectFloats(out[1], {3, 15}, {2, 1}, "2 * (h @ 1) - 1");
  ExpectFloats(out[2], {2, 10.0f / 17}, {2, 1}, "10 / (z + 2)");
  ExpectFloats(out[3], {1, 2, 3, 3, 4, 7}, {2, 3}, "x @ w^T (8.0.0 form)");
  return 0;
}
