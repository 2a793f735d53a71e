// The workload format: the JSON file and the command-line groups read the same workload, defaults
// as documented, orders optional only where the planner asks, and the plan's request order.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/workload.h"

namespace co_up {
namespace {

TEST(WorkloadParseTest, JsonAndGroupsReadTheSameWorkload) {
  const Workload j = parse_workload_json(R"({
      "mode": "switch", "policy": "priority",
      "networks": [
        {"name": "det", "graph": "resnet50", "image_size": 96, "order": "BBL", "split": "3:2",
         "frames": 500, "priority": 2},
        {"graph": "squeezenet", "order": "LLLL", "rate": 30.5, "batch": 4, "input": "x.npy"}]})",
                                         "test");
  const Workload s = parse_workload_short(
      "resnet50:BBL:name=det:image_size=96:split=3/2:frames=500:priority=2;"
      "squeezenet:LLLL:rate=30.5:batch=4:input=x.npy;mode=switch;policy=priority");
  for (const Workload* w : {&j, &s}) {
    EXPECT_EQ(w->mode, Mode::kSwitch);
    EXPECT_EQ(w->policy, GroupPolicy::kPriority);
    ASSERT_EQ(w->networks.size(), 2u);
    const WorkloadNetwork& det = w->networks[0];
    EXPECT_EQ(det.name, "det");
    EXPECT_EQ(det.graph, "resnet50");
    EXPECT_EQ(det.image_size, 96);
    EXPECT_EQ(det.order, "BBL");
    EXPECT_EQ(det.split, "3:2");
    EXPECT_EQ(det.frames, 500u);
    EXPECT_EQ(det.priority, 2);
    EXPECT_FALSE(det.rate.has_value());
    const WorkloadNetwork& sq = w->networks[1];
    EXPECT_EQ(sq.name, "squeezenet");  // the graph's name by default
    EXPECT_EQ(sq.frames, 100u);        // the default
    ASSERT_TRUE(sq.rate.has_value());
    EXPECT_DOUBLE_EQ(*sq.rate, 30.5);
    EXPECT_EQ(sq.batch, 4u);
    EXPECT_EQ(sq.input, "x.npy");
  }
  const Workload d = parse_workload_short("m.onnx:BB");
  EXPECT_EQ(d.networks[0].model, "m.onnx");
  EXPECT_EQ(d.networks[0].name, "m");
  EXPECT_EQ(d.mode, Mode::kPipeline);
  EXPECT_EQ(d.policy, GroupPolicy::kOldest);
}

TEST(WorkloadParseTest, OrdersAreOptionalOnlyWhenAsked) {
  const std::string text = R"({"networks": [{"graph": "squeezenet"}]})";
  EXPECT_THROW(parse_workload_json(text, "test"), InputError);
  const Workload w = parse_workload_json(text, "test", Orders::kOptional);
  EXPECT_TRUE(w.networks[0].order.empty());
  try {
    parse_workload_json(R"({"networks": [{"graph": "squeezenet", "order": "Bb"}]})", "test",
                        Orders::kOptional);
    FAIL() << "a lower-case letter passed";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("workload network 'squeezenet': order: ", 0), 0u) << e.what();
  }
}

TEST(WorkloadParseTest, PlanRanksCycleThePlan) {
  const Workload w = parse_workload_short("squeezenet:B:name=a;squeezenet:B:name=b;plan=a,b,b");
  const PlanRanks ranks(w);
  // a0 b0 b1 | a1 b2 b3 | ...
  EXPECT_EQ(ranks.rank(0, 0), 0u);
  EXPECT_EQ(ranks.rank(1, 0), 1u);
  EXPECT_EQ(ranks.rank(1, 1), 2u);
  EXPECT_EQ(ranks.rank(0, 1), 3u);
  EXPECT_EQ(ranks.rank(1, 2), 4u);
  EXPECT_EQ(ranks.rank(1, 3), 5u);
  // Without a plan: one request of each network in turn.
  const PlanRanks turns(parse_workload_short("squeezenet:B:name=a;squeezenet:B:name=b"));
  EXPECT_EQ(turns.rank(0, 0), 0u);
  EXPECT_EQ(turns.rank(1, 0), 1u);
  EXPECT_EQ(turns.rank(0, 1), 2u);
  EXPECT_THROW(parse_workload_short("squeezenet:B:name=a;squeezenet:B:name=b;plan=a"), InputError);
}

}  // namespace
}  // namespace co_up
