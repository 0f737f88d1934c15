#include "cli_reference.hpp"

#include <algorithm>
#include <iostream>
#include <sstream>

#include "cli_common.hpp"

namespace ckpt::cli {

namespace {

constexpr std::size_t kWidth = 96;   // the help's lines
constexpr std::size_t kColumn = 29;  // where an option's text starts

// `text` folded into lines of at most `width - indent` characters after `indent` spaces; a
// blank line in `text` starts a new paragraph.
std::string wrap(const std::string& text, std::size_t indent, std::size_t width = kWidth) {
  std::string out, line;
  const std::string pad(indent, ' ');
  std::istringstream paragraphs(text);
  std::string para;
  bool first_paragraph = true;
  auto flush = [&] {
    if (!line.empty()) out += pad + line + "\n";
    line.clear();
  };
  std::vector<std::string> blocks;
  std::string block;
  while (std::getline(paragraphs, para)) {
    if (para.empty()) {
      blocks.push_back(block);
      block.clear();
    } else {
      block += (block.empty() ? "" : " ") + para;
    }
  }
  blocks.push_back(block);
  for (const std::string& b : blocks) {
    if (b.empty()) continue;
    if (!first_paragraph) out += "\n";
    first_paragraph = false;
    std::istringstream words(b);
    std::string w;
    while (words >> w) {
      if (!line.empty() && pad.size() + line.size() + 1 + w.size() > width) flush();
      line += (line.empty() ? "" : " ") + w;
    }
    flush();
  }
  return out;
}

// "plan MODEL --budget B [options]", or the name alone for a command without arguments.
std::string usage_of(const CommandDoc& c) {
  return c.synopsis.empty() ? c.name : c.name + " " + c.synopsis;
}

std::string option_label(const OptionDoc& o) {
  return o.value.empty() ? o.flag : o.flag + " " + o.value;
}

// "  --budget B" and its text, from column kColumn (on the next line when the label is longer).
std::string labelled(const std::string& label, const std::string& text) {
  std::string out = "  ";
  out += label;
  const std::string wrapped = wrap(text, kColumn);
  if (out.size() + 1 <= kColumn) {
    out.resize(kColumn, ' ');
    out.append(wrapped.size() > kColumn ? wrapped.substr(kColumn) : std::string("\n"));
  } else {
    out += '\n';
    out += wrapped;
  }
  return out;
}

std::string help_group(const OptionGroup& g) {
  std::string out = g.title;
  out += ":\n";
  for (const OptionDoc& o : g.options) out += labelled(option_label(o), o.help);
  return out;
}

std::vector<OptionGroup> run_groups_of(const CommandDoc& c) {
  switch (c.run_options) {
    case TakesRunOptions::none:
      return {};
    case TakesRunOptions::without_outputs:
      return run_option_groups(false);
    case TakesRunOptions::all:
      return run_option_groups(true);
  }
  return {};
}

// The command's whole option list: its own groups, then run's (the output group is run's own),
// then the model options of a command that opens a MODEL.
std::vector<OptionGroup> all_groups_of(const CommandDoc& c) {
  std::vector<OptionGroup> groups = c.groups;
  if (c.opens_model) groups.push_back(load_option_group());
  for (OptionGroup& g : run_groups_of(c)) groups.push_back(std::move(g));
  return groups;
}

const char* kModelIs =
    "MODEL is a native .json model (see samples/), a .capture.json made by ckptlab_capture, an "
    "ONNX file exported from PyTorch, or the name of an installed sample (`ckptlab-cli run "
    "densenet_block`).";

CommandDoc run_command_doc() {
  return {
      "run",
      "MODEL [options]",
      "one forward + loss + backward; prints peak memory, memory by category, op executions by "
      "phase, recompute overhead, warnings",
      "Runs one forward, loss and backward with the engine and prints what it measured. Unless "
      "--no-baseline, the same model also runs without checkpointing, so the memory saved and "
      "the recompute overhead are ratios measured in the same process.",
      {},
      TakesRunOptions::all,
      kExitCodesText,
  };
}

struct HelpArgs {
  bool markdown = false;
  bool man = false;
};

const std::vector<OptionRule<HelpArgs>>& help_rules() {
  using S = const std::string&;
  static const std::vector<OptionRule<HelpArgs>> rules = {
      {"--markdown", "", "the CLI reference as Markdown (the generated part of docs/guide/cli.md)",
       [](HelpArgs& h, S, S) { h.markdown = true; }},
      {"--man", "", "the man page, ckptlab-cli(1), as troff",
       [](HelpArgs& h, S, S) { h.man = true; }},
  };
  return rules;
}

CommandDoc help_command_doc() {
  return {
      "help",
      "[COMMAND] [--markdown | --man]",
      "this help, a command's, or the whole reference as Markdown or a man page",
      "Prints the list of commands, one command's options (as COMMAND --help does), or every "
      "command and option as the CLI reference page or the man page, all from one table.",
      {option_group("help options", help_rules())},
      TakesRunOptions::none,
      "0 success, 2 usage",
      false,
  };
}

std::string markdown_cell(std::string s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string markdown_table(const OptionGroup& g) {
  std::ostringstream out;
  out << "| " << g.title << " | what it does |\n|---|---|\n";
  for (const OptionDoc& o : g.options)
    out << "| `" << markdown_cell(option_label(o)) << "` | " << markdown_cell(o.help) << " |\n";
  return out.str();
}

// troff: a hyphen is \-, a backslash \\, and a line may not start with a control character.
std::string roff(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '-')
      out += "\\-";
    else if (c == '\\')
      out += "\\\\";
    else
      out += c;
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out.insert(0, "\\&");
  return out;
}

std::string man_options(const OptionGroup& g) {
  std::ostringstream out;
  out << ".SS " << roff(g.title) << "\n";
  for (const OptionDoc& o : g.options) {
    out << ".TP\n\\fB" << roff(o.flag) << "\\fR";
    if (!o.value.empty()) out << " \\fI" << roff(o.value) << "\\fR";
    out << "\n" << roff(o.help) << "\n";
  }
  return out.str();
}

}  // namespace

const std::vector<CommandDoc>& command_docs() {
  static const std::vector<CommandDoc> docs = {run_command_doc(),
                                               modules_command_doc(),
                                               compare_command_doc(),
                                               code_command_doc(),
                                               plan_command_doc(),
                                               snapshot_command_doc(),
                                               capture_script_command_doc(),
                                               capture_ops_command_doc(),
                                               help_command_doc()};
  return docs;
}

const CommandDoc* find_command_doc(const std::string& name) {
  for (const CommandDoc& c : command_docs())
    if (c.name == name) return &c;
  return nullptr;
}

std::string main_help() {
  std::ostringstream out;
  out << "ckptlab-cli — activation checkpointing, measured (Checkpoint Lab)\n\nusage: ckptlab-cli "
         "<command> [arguments]\n\ncommands:\n";
  for (const CommandDoc& c : command_docs()) out << labelled(usage_of(c), c.summary);
  out << "\n"
      << wrap(std::string(kModelIs) +
                  " `ckptlab-cli <command> --help` gives each command's options. --version "
                  "prints the version.",
              0)
      << "exit codes: " << kExitCodesText << ".\n";
  return out.str();
}

std::string command_help(const CommandDoc& c) {
  std::ostringstream out;
  out << "usage: ckptlab-cli " << usage_of(c) << "\n\n" << wrap(c.description, 0);
  for (const OptionGroup& g : all_groups_of(c)) out << "\n" << help_group(g);
  out << "\n" << wrap("exit codes: " + c.exit_codes + ".", 0);
  return out.str();
}

std::string markdown_reference() {
  std::ostringstream out;
  out << "| command | what it does |\n|---|---|\n";
  for (const CommandDoc& c : command_docs())
    out << "| [`" << markdown_cell(usage_of(c)) << "`](#ckptlab-cli-" << c.name << ") | "
        << markdown_cell(c.summary) << " |\n";
  out << "\n" << kModelIs << "\n";
  for (const CommandDoc& c : command_docs()) {
    out << "\n### ckptlab-cli " << c.name << "\n\n```\nckptlab-cli " << usage_of(c) << "\n```\n\n"
        << c.description << "\n";
    for (const OptionGroup& g : c.groups) out << "\n" << markdown_table(g);
    if (c.run_options != TakesRunOptions::none)
      out << "\nIt takes the [run options](#run-options)"
          << (c.run_options == TakesRunOptions::all ? ", and run's output options" : "") << ".\n";
    out << "\nExit codes: " << c.exit_codes << ".\n";
  }
  out << "\n### Run options\n\n`run`, `code`, `plan`, each `compare --config` and `snapshot "
         "--compare` take these; the output options are `run`'s alone.\n";
  for (const OptionGroup& g : run_option_groups(true)) out << "\n" << markdown_table(g);
  out << "\n### Model options\n\nEvery command that opens a MODEL takes these.\n\n"
      << markdown_table(load_option_group());
  return out.str();
}

std::string man_page(const std::string& version) {
  std::ostringstream out;
  out << ".\\\" Generated by `ckptlab-cli help --man` from the CLI's option table.\n"
      << ".TH CKPTLAB\\-CLI 1 \"" << roff(version) << "\" \"Checkpoint Lab\" \"User Commands\"\n"
      << ".SH NAME\nckptlab\\-cli \\- activation checkpointing, measured, without a window\n"
      << ".SH SYNOPSIS\n";
  for (const CommandDoc& c : command_docs())
    out << ".B ckptlab\\-cli " << roff(c.name) << "\n" << roff(c.synopsis) << "\n.br\n";
  out << ".SH DESCRIPTION\n.B ckptlab\\-cli\nruns what\n.BR ckptlab (1)\nruns and prints what it "
         "shows, to the byte.\n"
      << roff(kModelIs) << "\n.SH COMMANDS\n";
  for (const CommandDoc& c : command_docs()) {
    out << ".SS " << roff(c.name) << "\n" << roff(c.description) << "\n";
    for (const OptionGroup& g : c.groups) out << man_options(g);
  }
  out << ".SH RUN OPTIONS\n\\fBrun\\fR, \\fBcode\\fR, \\fBplan\\fR, each \\fBcompare "
         "\\-\\-config\\fR and \\fBsnapshot \\-\\-compare\\fR take these (the output options: "
         "\\fBrun\\fR only).\n";
  for (const OptionGroup& g : run_option_groups(true)) out << man_options(g);
  out << ".SH MODEL OPTIONS\nEvery command that opens a MODEL takes these.\n"
      << man_options(load_option_group());
  out << ".SH EXIT STATUS\n" << roff(kExitCodesText) << ".\n.SH SEE ALSO\n.BR ckptlab (1)\n";
  return out.str();
}

int cmd_help(const std::vector<std::string>& args, const std::string& version) {
  HelpArgs h;
  std::vector<std::string> commands;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h") {
      std::cout << command_help(help_command_doc());
      return 0;
    }
    if (apply_option(help_rules(), args, i, h)) continue;
    if (args[i].rfind("-", 0) == 0) throw UsageError("unknown option " + args[i]);
    commands.push_back(args[i]);
  }
  if (h.markdown + h.man + !commands.empty() > 1)
    throw UsageError("help takes one of COMMAND, --markdown or --man");
  if (h.markdown) {
    std::cout << markdown_reference();
  } else if (h.man) {
    std::cout << man_page(version);
  } else if (!commands.empty()) {
    const CommandDoc* c = find_command_doc(commands[0]);
    if (!c || commands.size() > 1)
      throw UsageError("no command '" + commands[0] + "' (see ckptlab-cli --help)");
    std::cout << command_help(*c);
  } else {
    std::cout << main_help();
  }
  return 0;
}

}  // namespace ckpt::cli
