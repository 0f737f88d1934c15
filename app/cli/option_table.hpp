#pragma once

// One row per option of a command: its flag, the value it takes, what `--help`, the CLI
// reference (docs/guide/cli.md) and the man page say of it, and what it sets. Parsing, help
// and documentation read the same rows, so that none of them can drift from the others.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace ckpt::cli {

// A usage error: exit code 2, message printed with a hint to --help.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// An option as the help and the reference show it: "--budget" "B" "bytes (2GiB, ...) or ...".
struct OptionDoc {
  std::string flag;
  std::string value;  // empty for a switch
  std::string help;
};

struct OptionGroup {
  std::string title;  // "checkpoint options"
  std::vector<OptionDoc> options;
};

template <typename T>
struct OptionRule {
  const char* flag;
  const char* value;  // "" for a switch
  const char* help;
  void (*apply)(T& target, const std::string& flag, const std::string& value);
};

template <typename T>
OptionGroup option_group(std::string title, const std::vector<OptionRule<T>>& rules) {
  OptionGroup g{std::move(title), {}};
  for (const auto& r : rules) g.options.push_back({r.flag, r.value, r.help});
  return g;
}

// When args[i] is one of `rules`' flags: applies it (reading its value, args[i + 1]), moves i
// past what it used and returns true. Otherwise returns false and leaves i alone.
template <typename T>
bool apply_option(const std::vector<OptionRule<T>>& rules, const std::vector<std::string>& args,
                  std::size_t& i, T& target) {
  for (const auto& r : rules) {
    const std::string& arg = args[i];
    const bool takes_value = r.value[0] != '\0';
    const std::string flag = r.flag;
    // --flag VALUE, or --flag=VALUE.
    if (takes_value && arg.size() > flag.size() && arg.compare(0, flag.size(), flag) == 0 &&
        arg[flag.size()] == '=') {
      r.apply(target, flag, arg.substr(flag.size() + 1));
      return true;
    }
    if (arg != flag) continue;
    if (takes_value && i + 1 >= args.size()) throw UsageError(flag + " needs a " + r.value);
    r.apply(target, flag, takes_value ? args[++i] : std::string());
    return true;
  }
  return false;
}

}  // namespace ckpt::cli
