// The seed's add graph in C++: CreateInputs<2>(), operator+, SetOutput, BuildAndReset.
#include "common.h"

int main() {
  using namespace es;
  GraphPtr graph;
  {
    EsGraphBuilder builder("graph_name");
    auto [data0, data1] = builder.CreateInputs<2>();
    EsTensorHolder add = data0 + data1;
    Check(add.IsValid(), "data0 + data1");
    Check(add.GetProducer() != nullptr, "GetProducer");
    std::printf("producer: %s\n", EsGetNodeType(add.GetProducer()));
    // GE's symbolic shapes are not in ge-rs: refused with a message.
    Check(data0.SetOriginSymbolShape({"s0"}) == ES_ERR_NOT_SUPPORTED, "SetOriginSymbolShape must fail");
    std::printf("expected error: %s\n", GetLastErrorMessage().c_str());
    Check(builder.SetOutput(add, 0) == ES_SUCCESS, "SetOutput");
    graph = builder.BuildAndReset();
    Check(graph != nullptr, "BuildAndReset");
  }  // the builder and its holders are freed here; the graph lives on
  auto x = Floats({1, 2, 3}, {3});
  auto y = Floats({10, 20, 30}, {3});
  auto out = RunOnce(graph.get(), {x.get(), y.get()});
  Check(out.size() == 1, "one output");
  ExpectFloats(out[0], {11, 22, 33}, {3}, "add");
  return 0;
}
