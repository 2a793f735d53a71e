// The model zoo: the five networks of the ARM-CO-UP evaluation and Inception-v3 (the Para-Pipe
// evaluation's second inception network), built with GraphBuilder.
//
// Layer units follow ARM-CO-UP's released graphs (one letter of --order each):
//   alexnet 8     conv1..conv5 (ReLU/LRN/pool folded in), fc6, fc7, fc8 (+softmax)
//   googlenet 11  conv1 (conv+pool+lrn), conv2 stage (reduce+conv+lrn+pool), 9 inception modules
//                 (pools between modules attach to the preceding module; the last takes the
//                 classifier)
//   mobilenet 14  first conv, 13 depthwise+pointwise pairs (the last takes pool+classifier)
//   resnet50 18   conv1+pool, 16 bottlenecks, classifier (pool+fc+softmax)
//   squeezenet 10 conv1 (+pool), 8 fire modules (pools attach to the preceding unit), conv10
//                 (+pool+softmax)
//   inception_v3 13  stem_a (3 convs + pool), stem_b (2 convs + pool), 11 Mixed modules (the last
//                 takes the classifier); 299x299 by default, at least 75x75
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/graph.h"

namespace co_up::graph {

struct ZooOptions {
  // Input height = width; 0 means the network's standard size (227 for AlexNet, 224 otherwise).
  // Smaller sizes keep every layer and shrink the work, for tests under sanitizers.
  int64_t image_size = 0;
  int64_t batch = 1;
};

struct ZooEntry {
  std::string name;
  std::string description;
  int64_t default_image_size;
  uint32_t layer_count;
  // Channel order and normalisation its (Caffe or torchvision) weights expect, for --image.
  bool bgr;
  float mean[3];
  float std[3];
};

const std::vector<ZooEntry>& zoo_entries();
// nullptr when unknown.
const ZooEntry* find_zoo_entry(const std::string& name);
// Throws InputError for an unknown name (listing the known ones).
Graph build_zoo_graph(const std::string& name, WeightSource& weights, const ZooOptions& options);

// The input size a builder uses: options.image_size, or `default_size` when it is 0. Throws
// InputError naming the network for a negative size or a batch below 1.
int64_t checked_image_size(const char* network, const ZooOptions& options, int64_t default_size);

// One builder per network (graph/zoo/<name>.cpp).
Graph build_alexnet(WeightSource& weights, const ZooOptions& options);
Graph build_googlenet(WeightSource& weights, const ZooOptions& options);
Graph build_mobilenet(WeightSource& weights, const ZooOptions& options);
Graph build_resnet50(WeightSource& weights, const ZooOptions& options);
Graph build_squeezenet(WeightSource& weights, const ZooOptions& options);
Graph build_inception_v3(WeightSource& weights, const ZooOptions& options);

}  // namespace co_up::graph
