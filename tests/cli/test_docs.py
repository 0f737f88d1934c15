#!/usr/bin/env python3
"""The pages a person reads say what is there (issue 41).

- README.md is at most 250 lines: a newcomer reads it in five minutes.
- Every relative link of README.md, CONTRIBUTING.md, samples/README.md and docs/**/*.md leads to
  a file that exists, and an anchor to a heading that file has.
- Every `ckptlab-cli COMMAND ...` those pages show names a command the CLI has, only options
  that command's --help lists, and files (samples, tests' data) that exist.
- The reference part of docs/guide/cli.md is what `ckptlab-cli help --markdown` prints from the
  CLI's option table (the same rows as --help and the man page); --write rewrites it.
- The README's shell examples are run: each `# ...` line under a command is a line of what the
  command prints now ("..." stands for any text), so a figure quoted there cannot drift.

usage: test_docs.py SOURCE_DIR CKPTLAB_CLI [--write]
"""
import glob
import os
import re
import shlex
import subprocess
import sys

README_MAX_LINES = 250

failures = []


def fail(where, what):
    failures.append(f"{where}: {what}")


def pages(root):
    found = [os.path.join(root, "README.md"), os.path.join(root, "CONTRIBUTING.md"),
             os.path.join(root, "samples", "README.md")]
    found += sorted(glob.glob(os.path.join(root, "docs", "**", "*.md"), recursive=True))
    return [p for p in found if os.path.isfile(p)]


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors_of(path, cache={}):
    if path not in cache:
        found, in_code = set(), False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("```"):
                    in_code = not in_code
                elif not in_code and line.startswith("#"):
                    found.add(slug(line.lstrip("#")))
        cache[path] = found
    return cache[path]


LINK = re.compile(r"\]\(([^)\s]+)\)|\b(?:src|href)=\"([^\"]+)\"")


def check_links(root, page):
    rel = os.path.relpath(page, root)
    text = open(page, encoding="utf-8").read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # code is not a link
    for m in LINK.finditer(text):
        target = m.group(1) or m.group(2)
        if re.match(r"^[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = page if not path else os.path.normpath(os.path.join(os.path.dirname(page), path))
        if not os.path.exists(dest):
            fail(rel, f"links to {target}, which does not exist")
        elif anchor and dest.endswith(".md") and anchor not in anchors_of(dest):
            fail(rel, f"links to {target}: {os.path.relpath(dest, root)} has no heading #{anchor}")


def cli_help(cli, command, cache={}):
    if command not in cache:
        args = [cli, "--help"] if command is None else [cli, command, "--help"]
        r = subprocess.run(args, capture_output=True, text=True, timeout=60)
        cache[command] = r.returncode, r.stdout + r.stderr
    return cache[command]


COMMAND = re.compile(r"ckptlab-cli((?: +(?:'[^'`]*'|\"[^\"`]*\"|[^\s`'\"|#;]+))+)")


def commands_in(text):
    """Every `ckptlab-cli ...` invocation: in code blocks a whole line (with its \\
    continuations), elsewhere up to the closing backtick."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    joined = re.sub(r"\\\n\s*", " ", text)
    for line in joined.split("\n"):
        for m in COMMAND.finditer(line):
            try:
                yield shlex.split(m.group(1))
            except ValueError:
                continue


def option_names(help_text):
    return set(re.findall(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*)", help_text))


def check_command(root, cli, rel, words, top_help):
    if not words or words[0].startswith("-"):
        return
    command, rest = words[0], words[1:]
    if not re.fullmatch(r"[a-z][a-z-]*", command):
        return  # prose around the name: "ckptlab-cli (headless)", "ckptlab-cli <command>"
    if not re.search(rf"^\s+{re.escape(command)}\b", top_help, re.M):
        fail(rel, f"`ckptlab-cli {command}`: no such command in `ckptlab-cli --help`")
        return
    rc, help_text = cli_help(cli, command)
    if rc != 0:
        fail(rel, f"`ckptlab-cli {command} --help` exits {rc}")
        return
    known = option_names(help_text)
    run_known = option_names(cli_help(cli, "run")[1])
    pending = [(w, command, known) for w in rest]
    while pending:
        w, whose, flags = pending.pop(0)
        if w == "--config" and pending:
            # "label: --opt a --opt b": the options of run, inside one argument.
            value = pending.pop(0)[0]
            inner = value.split(":", 1)[1] if ":" in value.split("--")[0] else value
            try:
                pending[0:0] = [(x, "run (in --config)", run_known) for x in shlex.split(inner)]
            except ValueError:
                fail(rel, f"`--config {value}` does not parse")
            continue
        if w.startswith("--"):
            flag = w.split("=", 1)[0]
            if flag not in flags and flag != "--help":
                fail(rel, f"`ckptlab-cli {command} ... {flag}`: {whose} has no option {flag}")
        elif re.match(r"^(samples|tests|docs)/[\w./-]+\.(json|onnx|pickle|npy)$", w):
            if not os.path.exists(os.path.join(root, w)):
                fail(rel, f"`ckptlab-cli {command} {w}`: {w} does not exist")


def run_readme_examples(root, cli, readme):
    """Runs each `build/app/cli/ckptlab-cli ...` line of the README's sh blocks and finds every
    `# ` line after it in what the command printed."""
    text = open(readme, encoding="utf-8").read()
    ran = 0
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        lines = block.split("\n")
        i = 0
        while i < len(lines):
            line = lines[i]
            i += 1
            if not line.startswith("build/app/cli/ckptlab-cli "):
                continue
            expected = []
            while i < len(lines) and lines[i].startswith("# "):
                expected.append(lines[i][2:])
                i += 1
            if not expected:
                continue
            args = shlex.split(line.split(" #", 1)[0])[1:]
            r = subprocess.run([cli] + args, capture_output=True, text=True, cwd=root,
                               timeout=600)
            ran += 1
            printed = (r.stdout + r.stderr).split("\n")
            for want in expected:
                pattern = ".*".join(re.escape(p) for p in want.split("..."))
                if not any(re.fullmatch(pattern, p.rstrip()) for p in printed):
                    fail("README.md", f"`{line}` no longer prints `{want}` "
                                      f"(exit {r.returncode}; it printed:\n{r.stdout}{r.stderr})")
    return ran


BEGIN = "<!-- BEGIN GENERATED: ckptlab-cli help --markdown -->"
END = "<!-- END GENERATED -->"


def check_reference(root, cli, write):
    page = os.path.join(root, "docs", "guide", "cli.md")
    text = open(page, encoding="utf-8").read()
    if BEGIN not in text or END not in text:
        fail("docs/guide/cli.md", f"has no {BEGIN} ... {END} section")
        return
    r = subprocess.run([cli, "help", "--markdown"], capture_output=True, text=True, timeout=60)
    if r.returncode != 0 or not r.stdout.strip():
        fail("ckptlab-cli help --markdown", f"exits {r.returncode}: {r.stderr}")
        return
    before, rest = text.split(BEGIN, 1)
    current, after = rest.split(END, 1)
    wanted = "\n" + r.stdout.strip() + "\n"
    if current == wanted:
        return
    if write:
        open(page, "w", encoding="utf-8").write(before + BEGIN + wanted + END + after)
        print("test_docs: rewrote the reference in docs/guide/cli.md")
    else:
        fail("docs/guide/cli.md", "its reference differs from `ckptlab-cli help --markdown`; "
                                  "rerun this script with --write")


def main():
    root, cli = sys.argv[1], sys.argv[2]
    check_reference(root, cli, "--write" in sys.argv[3:])
    readme = os.path.join(root, "README.md")
    n = sum(1 for _ in open(readme, encoding="utf-8"))
    if n > README_MAX_LINES:
        fail("README.md", f"{n} lines, over {README_MAX_LINES}: move the detail into docs/guide/")
    rc, top_help = cli_help(cli, None)
    if rc != 0:
        fail("ckptlab-cli --help", f"exits {rc}")
    checked = 0
    for page in pages(root):
        check_links(root, page)
        rel = os.path.relpath(page, root)
        for words in commands_in(open(page, encoding="utf-8").read()):
            check_command(root, cli, rel, words, top_help)
            checked += 1
    ran = run_readme_examples(root, cli, readme)
    print(f"test_docs: {len(pages(root))} pages, {checked} ckptlab-cli commands checked, "
          f"{ran} README examples run; README.md {n} lines")
    if checked == 0 or ran == 0:
        fail("test_docs", "found no command to check: the scan reads nothing")
    for f in failures:
        print("FAIL " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
