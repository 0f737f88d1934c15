#pragma once

// ckptlab-cli's commands as one table: each command's usage, what it does and its options (the
// rows its parser reads, option_table.hpp). `--help`, the CLI reference page
// (docs/guide/cli.md, `ckptlab-cli help --markdown`) and the man page (`ckptlab-cli help --man`,
// installed as ckptlab-cli(1)) are all printed from it, so that none can drift from the parser.

#include <string>
#include <vector>

#include "cli_options.hpp"
#include "option_table.hpp"

namespace ckpt::cli {

// What most commands' exit codes mean.
inline constexpr const char* kExitCodesText =
    "0 success, 2 usage, 3 the model could not be loaded, 4 the run failed";

// Which of run's options a command takes after its own.
enum class TakesRunOptions { none, without_outputs, all };

struct CommandDoc {
  std::string name;                 // "plan"
  std::string synopsis;             // "MODEL --budget B [options]"
  std::string summary;              // one line for the list of commands
  std::string description;          // paragraphs, separated by blank lines
  std::vector<OptionGroup> groups;  // the command's own options
  TakesRunOptions run_options = TakesRunOptions::none;
  std::string exit_codes;   // "0 a plan fits, 2 usage, ..."
  bool opens_model = true;  // then it takes the model options (--frozen)
};

// Every command, in the order the help lists them.
const std::vector<CommandDoc>& command_docs();
const CommandDoc* find_command_doc(const std::string& name);

std::string main_help();
std::string command_help(const CommandDoc& doc);
// The reference page's generated part (Markdown) and the man page (troff).
std::string markdown_reference();
std::string man_page(const std::string& version);

// `ckptlab-cli help [COMMAND] [--markdown | --man]`.
int cmd_help(const std::vector<std::string>& args, const std::string& version);

// Each command's own entry, declared beside the command.
CommandDoc plan_command_doc();
CommandDoc snapshot_command_doc();
CommandDoc modules_command_doc();
CommandDoc compare_command_doc();
CommandDoc code_command_doc();
CommandDoc capture_script_command_doc();
CommandDoc capture_ops_command_doc();

}  // namespace ckpt::cli
