#include "cli/export_partitions.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <system_error>

#include "core/error.h"
#include "core/message_text.h"
#include "graph/onnx/onnx_exporter.h"

namespace co_up::cli {

std::string partition_model_name(const std::string& graph_name, uint32_t first_layer,
                                 uint32_t last_layer) {
  return graph_name + "_" + std::to_string(first_layer) + "_" + std::to_string(last_layer);
}

std::string accelerator_letters(const Platform& platform) {
  std::string letters = "N";
  for (const ProcessorSpec& p : platform.processors) {
    if ((p.kind == "npu" || p.kind == "dsp") && letters.find(p.letter) == std::string::npos) {
      letters += p.letter;
    }
  }
  return letters;
}

std::vector<ExportedPartition> export_partitions(const graph::Graph& graph,
                                                 const Partition& partition,
                                                 const Platform& platform,
                                                 const std::filesystem::path& dir) {
  const std::string accelerators = accelerator_letters(platform);
  std::vector<const SubGraph*> chosen;
  for (const SubGraph& sg : partition.subgraphs()) {
    if (accelerators.find(sg.processor) != std::string::npos) chosen.push_back(&sg);
  }
  if (chosen.empty()) {
    throw InputError("--export-partitions: order " + order_for_message(partition.order()) +
                     " maps no layer to an accelerator (letters " + accelerators +
                     " on platform '" + platform.name +
                     "'); put N where the NPU runs, e.g. --order=" +
                     std::string(partition.order().size() - partition.order().size() / 2, 'B') +
                     std::string(partition.order().size() / 2, 'N'));
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw InputError("--export-partitions='" + dir.string() + "': cannot create the directory (" +
                     (ec ? ec.message() : std::string("a file of that name exists")) + ")");
  }
  std::vector<ExportedPartition> written;
  for (const SubGraph* sg : chosen) {
    graph::OnnxExportRegion region;
    region.name = partition_model_name(graph.name(), sg->first_layer, sg->last_layer);
    region.nodes = sg->nodes;
    region.inputs = sg->inputs;
    region.outputs = sg->outputs;
    const std::filesystem::path path = dir / (region.name + ".onnx");
    const std::string bytes = graph::export_onnx_bytes(graph, region);
    // Written beside and renamed, so a failure never leaves a truncated model for the converter.
    const std::filesystem::path partial = dir / (region.name + ".onnx.partial");
    {
      std::ofstream file(partial, std::ios::binary | std::ios::trunc);
      file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      file.close();
      if (!file) {
        const std::string reason = std::strerror(errno);
        std::filesystem::remove(partial, ec);
        throw InputError("--export-partitions: cannot write '" + path.string() + "': " + reason +
                         " (choose a writable directory)");
      }
    }
    std::filesystem::rename(partial, path, ec);
    if (ec) {
      std::filesystem::remove(partial, ec);
      throw InputError("--export-partitions: cannot write '" + path.string() + "': " + ec.message());
    }
    written.push_back({path, sg, std::filesystem::file_size(path, ec)});
  }
  return written;
}

int run_export_partitions(const graph::Graph& graph, const std::string& order,
                          const Platform& platform, const std::filesystem::path& dir,
                          std::ostream& out) {
  const Partition partition = Partition::create(graph, order);
  const std::vector<graph::LayerUnit> layers = graph.layers();
  for (const ExportedPartition& e : export_partitions(graph, partition, platform, dir)) {
    const SubGraph& sg = *e.subgraph;
    out << "wrote " << e.path.string() << ": layers " << sg.first_layer << "-" << sg.last_layer
        << " (" << layers.at(sg.first_layer).name;
    if (sg.last_layer != sg.first_layer) out << " .. " << layers.at(sg.last_layer).name;
    out << ") of " << graph.name() << " for " << sg.processor << ", " << sg.inputs.size()
        << (sg.inputs.size() == 1 ? " input, " : " inputs, ") << sg.outputs.size()
        << (sg.outputs.size() == 1 ? " output, " : " outputs, ") << std::fixed
        << std::setprecision(1) << static_cast<double>(e.bytes) / 1e6 << " MB\n";
  }
  return 0;
}

}  // namespace co_up::cli
