#include "power/frequency_plan.h"

#include <cctype>

#include "core/error.h"
#include "core/message_text.h"

namespace co_up::power {
namespace {

[[noreturn]] void malformed(const std::string& text, const std::string& why) {
  throw InputError("malformed --frequency='" + shorten_for_message(text, 60) + "': " + why +
                   " (e.g. 7-4-6-[3,2]-[4,4]-1-1-1, {2-3-1}, {{4-5-2}}, min, max)");
}

// Levels are 1-based (1 = lowest frequency), as --list-frequencies numbers them.
int parse_level(const std::string& text, const std::string& token) {
  if (token.empty() || token.size() > 3) {
    malformed(text, "level '" + token + "' is not a level number (1 = lowest frequency)");
  }
  for (char c : token) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      malformed(text, "level '" + token + "' is not a level number (1 = lowest frequency)");
    }
  }
  return std::stoi(token);  // 0 and levels beyond a table: refused against the platform's tables
}

// Splits on '-' outside brackets.
std::vector<std::string> split_tokens(const std::string& text, const std::string& body) {
  std::vector<std::string> tokens(1);
  int depth = 0;
  for (char c : body) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0 || depth > 1) malformed(text, "unbalanced '[' ']'");
    if (c == '-' && depth == 0) {
      tokens.emplace_back();
    } else {
      tokens.back() += c;
    }
  }
  if (depth != 0) malformed(text, "unbalanced '[' ']'");
  return tokens;
}

FrequencyToken parse_token(const std::string& text, const std::string& token, char letter,
                           size_t position) {
  const std::string where = "token " + std::to_string(position + 1) + " ('" + token + "')";
  FrequencyToken t;
  if (letter == 'G') {
    if (token.size() < 5 || token.front() != '[' || token.back() != ']') {
      malformed(text, where + " is for a GPU layer and must be [gpu_level,host_cpu_level]");
    }
    const std::string inner = token.substr(1, token.size() - 2);
    const auto comma = inner.find(',');
    if (comma == std::string::npos) malformed(text, where + " needs two levels: [g,h]");
    t.level = parse_level(text, inner.substr(0, comma));
    t.host_level = parse_level(text, inner.substr(comma + 1));
    return t;
  }
  if (!token.empty() && token.front() == '[') {
    malformed(text, where + " is for a '" + std::string(1, letter) +
                        "' layer; only GPU (G) tokens take [g,h]");
  }
  t.level = parse_level(text, token);
  return t;
}

}  // namespace

FrequencyPlan parse_frequency(const std::string& text, const std::string& order,
                              const std::string& subgraph_letters) {
  FrequencyPlan plan;
  if (text.empty()) return plan;
  if (text == "min" || text == "max") {
    plan.scope = text == "min" ? FrequencyPlan::Scope::kMin : FrequencyPlan::Scope::kMax;
    return plan;
  }
  if (text.rfind("{{", 0) == 0) {
    if (text.size() < 4 || text.substr(text.size() - 2) != "}}") malformed(text, "missing '}}'");
    plan.scope = FrequencyPlan::Scope::kWholeRun;
    const auto tokens = split_tokens(text, text.substr(2, text.size() - 4));
    if (tokens.size() != 3) {
      malformed(text, "{{...}} takes three levels: LITTLE-big-GPU, got " +
                          std::to_string(tokens.size()));
    }
    for (size_t i = 0; i < tokens.size(); ++i) plan.tokens.push_back(parse_token(text, tokens[i], 'B', i));
    return plan;
  }
  std::string body = text;
  std::string letters = order;
  plan.scope = FrequencyPlan::Scope::kPerLayer;
  if (text.front() == '{') {
    if (text.back() != '}') malformed(text, "missing '}'");
    body = text.substr(1, text.size() - 2);
    letters = subgraph_letters;
    plan.scope = FrequencyPlan::Scope::kPerSubGraph;
  }
  const auto tokens = split_tokens(text, body);
  if (tokens.size() != letters.size()) {
    malformed(text, std::to_string(tokens.size()) + " tokens for " +
                        std::to_string(letters.size()) +
                        (plan.scope == FrequencyPlan::Scope::kPerLayer ? " layers" : " sub-graphs") +
                        " of order " + order_for_message(order));
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    plan.tokens.push_back(parse_token(text, tokens[i], letters[i], i));
  }
  return plan;
}

}  // namespace co_up::power
