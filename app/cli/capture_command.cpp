#include "capture_command.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli_common.hpp"
#include "cli_options.hpp"
#include "cli_reference.hpp"
#include "engine/model/capture_loader.hpp"

namespace ckpt::cli {

namespace {

bool wants_help(const std::vector<std::string>& args) {
  return !args.empty() && (args[0] == "--help" || args[0] == "-h");
}

}  // namespace

CommandDoc capture_ops_command_doc() {
  return {
      "capture-ops",
      "",
      "the ATen ops a capture made by ckptlab_capture may contain",
      "Lists the ATen ops (qualified names, one a line) that a capture made by ckptlab_capture "
      "may contain: each has a translation in the op table. ckptlab_capture.capture(..., "
      "check=True) reads this list to name the ops a model dispatches that Checkpoint Lab "
      "cannot load, before writing.",
      {},
      TakesRunOptions::none,
      "0 success, 2 usage",
      false,
  };
}

CommandDoc capture_script_command_doc() {
  return {
      "capture-script",
      "DIR",
      "writes ckptlab_capture.py, which records a PyTorch model as PyTorch runs it (a "
      ".capture.json MODEL), for your own Python environment",
      "Writes DIR/ckptlab_capture.py, the capture module of this build, for a Python "
      "environment of your own (a venv, conda): it needs nothing but torch (1.13 or 2.x). Then "
      "`cd DIR && python3 -c \"import ckptlab_capture\"`, or put DIR on PYTHONPATH.",
      {},
      TakesRunOptions::none,
      "0 success, 2 usage, 4 the file could not be written",
      false,
  };
}

int cmd_capture_ops(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::cout << command_help(capture_ops_command_doc());
    return kExitOk;
  }
  if (!args.empty()) throw UsageError("capture-ops takes no arguments");
  for (const auto& name : supported_aten_ops()) std::cout << name << "\n";
  return kExitOk;
}

int cmd_capture_script(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::cout << command_help(capture_script_command_doc());
    return kExitOk;
  }
  if (args.size() != 1) throw UsageError("capture-script takes one argument, the directory");
  const std::filesystem::path dir(args[0]);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::filesystem::path file = dir / "ckptlab_capture.py";
  std::ofstream out(file, std::ios::binary);
  out << kCaptureScript;
  out.close();
  if (!out) {
    std::cerr << "ckptlab-cli: cannot write " << file.string() << "\n";
    return kExitRun;
  }
  std::cout << file.string() << "\n";
  return kExitOk;
}

}  // namespace ckpt::cli
