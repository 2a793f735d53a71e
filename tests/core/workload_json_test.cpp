// The workload writer (workload_json): what `co_up plan --out` writes is read back by the
// runtime's parser into the same Workload, field for field, and written again to the same text.
#include <gtest/gtest.h>

#include "core/workload.h"

namespace co_up {
namespace {

Workload every_field() {
  Workload w;
  w.mode = Mode::kSwitch;
  w.policy = GroupPolicy::kPlan;
  w.plan = {"det", "cls", "det", "onnx-net"};
  WorkloadNetwork det;
  det.name = "det";
  det.graph = "resnet50";
  det.image_size = 64;
  det.order = "BBLL";
  det.split = "layers:2";
  det.input = "in/det.npy";
  det.frames = uint64_t{1} << 40;  // the largest a workload takes
  det.rate = 1.0 / 3.0;  // no short decimal: the text must keep every bit
  det.priority = -7;
  det.batch = 3;
  WorkloadNetwork cls;
  cls.name = "cls";
  cls.graph = "mobilenet";
  cls.order = "L";
  cls.rate = 29.97;
  WorkloadNetwork onnx;
  onnx.name = "onnx-net";
  onnx.model = "models/m.onnx";
  onnx.order = "GGB";
  onnx.priority = 1000000;
  w.networks = {det, cls, onnx};
  return w;
}

TEST(WorkloadJson, EveryFieldReadsBackEqualAndWritesTheSameText) {
  const Workload w = every_field();
  const std::string text = workload_json(w);
  const Workload back = parse_workload_json(text, "workload 'w.json'");
  EXPECT_EQ(back, w) << text;
  EXPECT_EQ(back.networks[0].rate, 1.0 / 3.0);
  EXPECT_EQ(workload_json(back), text);
}

TEST(WorkloadJson, WritesTheDocumentedKeysAndLeavesEmptyOnesOut) {
  Workload w;
  WorkloadNetwork n;
  n.name = "squeezenet";
  n.graph = "squeezenet";
  n.order = "BL";
  w.networks = {n};
  EXPECT_EQ(workload_json(w), R"({
  "mode": "pipeline",
  "policy": "oldest",
  "networks": [
    {
      "name": "squeezenet",
      "graph": "squeezenet",
      "order": "BL",
      "frames": 100,
      "priority": 0,
      "batch": 1
    }
  ]
}
)");
}

TEST(WorkloadJson, ShortFormAndOrderlessWorkloadsRoundTrip) {
  // The short form's defaults (name from the graph) and the planner's input (no orders).
  const Workload shorter = parse_workload_short(
      "squeezenet:BBLL:frames=7:rate=12.5:image_size=32;mobilenet:name=m:priority=2;policy=plan;plan=m,squeezenet,m",
      Orders::kOptional);
  const Workload back = parse_workload_json(workload_json(shorter), "workload 'w.json'", Orders::kOptional);
  EXPECT_EQ(back, shorter);
  EXPECT_EQ(back.networks[1].order, "");
  EXPECT_EQ(back.plan, (std::vector<std::string>{"m", "squeezenet", "m"}));
}

}  // namespace
}  // namespace co_up
