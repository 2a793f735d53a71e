#include "cli/listings.h"

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "core/bound_processor.h"
#include "core/signal_dispositions.h"
#include "graph/parallel_regions.h"

namespace co_up::cli {

void list_layers(const graph::Graph& g, bool constants) {
  if (constants) {
    for (const graph::Tensor& t : g.tensors()) {
      if (t.is_constant) std::cout << t.name << " " << t.desc.shape_string() << "\n";
    }
    return;
  }
  int64_t total = 0;
  const std::vector<graph::LayerSummary> layers = graph::summarize_layers(g);
  int name_width = 22;  // wider when a name (an ONNX node path) would run into the ops
  for (const graph::LayerSummary& l : layers) name_width = std::max(name_width, static_cast<int>(l.name.size()) + 2);
  for (const graph::LayerSummary& l : layers) {
    std::cout << std::setw(3) << l.index << "  " << std::left << std::setw(name_width) << l.name
              << std::setw(48) << l.ops << ' ' << std::setw(18) << l.output_shape << std::right
              << std::fixed << std::setprecision(1) << static_cast<double>(l.macs) / 1e6
              << " MMACs\n";
    total += l.macs;
  }
  std::cout << g.layer_count() << " layers, " << std::fixed << std::setprecision(3)
            << static_cast<double>(total) / 1e9 << " GMACs\n";
}

void list_plugins(const PluginRegistry& registry) {
  std::cout << "plugins in " << registry.directory().string() << ":\n";
  if (registry.records().empty()) std::cout << "  (no .so files)\n";
  for (const PluginRecord& r : registry.records()) {
    // A backend name of 16 characters or more still gets a space before the file name.
    std::cout << "  " << std::left << std::setw(9) << outcome_name(r.outcome) << std::setw(15)
              << (r.backend.empty() ? "-" : r.backend) << ' ' << r.path.filename().string();
    if (!r.version.empty()) std::cout << " v" << r.version;
    if (!r.description.empty()) std::cout << " — " << r.description;
    if (!r.reason.empty()) std::cout << "\n            reason: " << r.reason;
    if (!r.restored_signals.empty()) {
      std::cout << "\n            note: loading it changed the handling of "
                << signal_names(r.restored_signals) << "; co_up restored its own";
    }
    std::cout << "\n";
  }
}

void list_devices(const Platform& platform, const PluginRegistry& registry) {
  std::cout << "platform " << platform.name;
  if (!platform.description.empty()) std::cout << " (" << platform.description << ")";
  std::cout << "\n";
  for (const ProcessorSpec& p : platform.processors) {
    const std::shared_ptr<const Plugin> plugin = find_backend_plugin(p, registry);
    const std::string backend = plugin ? plugin->name() : "none available";
    std::cout << "  " << p.letter << "  " << std::left << std::setw(28) << p.name << std::setw(5)
              << p.kind << " backend " << std::setw(16) << backend;
    if (p.is_cpu()) {
      std::cout << "cores ";
      for (size_t i = 0; i < p.cores.size(); ++i) std::cout << (i ? "," : "") << p.cores[i];
      std::cout << ", threads " << p.threads;
    } else {
      std::cout << "host " << p.host;
    }
    std::cout << "\n";
    // An accelerator's plugin describes what its driver sees (the opencl plugin: every OpenCL
    // platform and device the ICD loader lists), so the core links no vendor API.
    for (const PluginRecord& r : registry.records()) {
      if (!p.is_cpu() && r.backend == backend && !r.description.empty()) {
        std::cout << "       " << r.description << "\n";
      }
    }
  }
}

void list_frequencies(const Platform& platform) {
  std::cout << "platform " << platform.name
            << ": DVFS levels (--frequency takes the level number, 1 = lowest)\n";
  bool any = false;
  for (const ProcessorSpec& p : platform.processors) {
    std::cout << "  " << p.letter << "  " << p.name;
    if (!p.dvfs.present()) {
      std::cout << (p.is_cpu() ? ": no DVFS table\n" : "")
                << (!p.is_cpu() && p.kind != "gpu" ? std::string(": runs at its host's level (") +
                                                         p.host + ")\n"
                                                   : std::string())
                << (p.kind == "gpu" ? ": no DVFS table\n" : "");
      continue;
    }
    any = true;
    std::cout << " (" << p.dvfs.driver << " ";
    for (size_t i = 0; i < p.dvfs.nodes.size(); ++i) std::cout << (i ? "," : "") << p.dvfs.nodes[i];
    std::cout << ")";
    if (p.dvfs.default_level >= 0) std::cout << ", default level " << p.dvfs.default_level + 1;
    std::string others = platform.dvfs_domain(p.letter);
    others.erase(std::remove(others.begin(), others.end(), p.letter), others.end());
    if (!others.empty()) {
      std::cout << ", one DVFS domain with";
      for (size_t i = 0; i < others.size(); ++i) std::cout << (i ? ", " : " ") << others[i];
      std::cout << " (shared " << p.dvfs.driver << " node: a level set for one is set for all)";
    }
    std::cout << "\n";
    for (size_t i = 0; i < p.dvfs.frequencies_khz.size(); ++i) {
      std::cout << "     " << std::setw(2) << i + 1 << "  " << std::setw(5)
                << (p.dvfs.frequencies_khz[i] + 500) / 1000 << " MHz";
      if (!p.dvfs.voltages_mv.empty()) std::cout << "  " << p.dvfs.voltages_mv[i] << " mV";
      std::cout << "\n";
    }
  }
  if (!any) std::cout << "  (no DVFS tables: no cpufreq under the sysfs root, or none in the platform file)\n";
}

}  // namespace co_up::cli
