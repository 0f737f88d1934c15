#include "capture_command.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli_common.hpp"
#include "cli_options.hpp"
#include "engine/model/capture_loader.hpp"

namespace ckpt::cli {

namespace {

const char* kCaptureOpsHelp = R"(usage: ckptlab-cli capture-ops

Lists the ATen ops (qualified names, one a line) that a capture made by ckptlab_capture may
contain: each has a translation in the op table. ckptlab_capture.capture(..., check=True) reads
this list to name the ops a model dispatches that Checkpoint Lab cannot load, before writing.
)";

const char* kCaptureScriptHelp = R"(usage: ckptlab-cli capture-script DIR

Writes DIR/ckptlab_capture.py, the capture module of this build, for a Python environment of
your own (a venv, conda): it needs nothing but torch (1.13 or 2.x).

  cd DIR && python3 -c "import ckptlab_capture"   # or put DIR on PYTHONPATH
)";

bool wants_help(const std::vector<std::string>& args) {
  return !args.empty() && (args[0] == "--help" || args[0] == "-h");
}

}  // namespace

int cmd_capture_ops(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::cout << kCaptureOpsHelp;
    return kExitOk;
  }
  if (!args.empty()) throw UsageError("capture-ops takes no arguments");
  for (const auto& name : supported_aten_ops()) std::cout << name << "\n";
  return kExitOk;
}

int cmd_capture_script(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::cout << kCaptureScriptHelp;
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
