"""The docs agree with the code.

- The pass tables of docs/design.md and passes/README.md list, in order, the
  passes a compile runs: all of them with every optional pass turned on
  (pipeline parallelism, which refuses some of them, in a compile of its
  own), and exactly the rows marked "always" or "by default" with none.
  Every pass that passes/Passes.td declares is in a table.
- docs/compiler.md's table of options is the one tests/python/
  option_table.py makes from compiler/config/ConfigOptions.def.
- Every relative link and #anchor in docs/*.md, README.md,
  python_api/README.md and passes/README.md resolves. Anchors are GitHub's:
  the heading in lower case, punctuation removed, spaces as '-', and -1,
  -2, ... after repeated headings.
"""

import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import pytest

# The runfiles root: the workspace's files under their repository paths.
ROOT = os.getcwd()
# The source tree, for link targets that are not in the runfiles (folders,
# files of other packages): the runfiles are links into it.
SOURCE = os.path.dirname(os.path.realpath(os.path.join(ROOT, "README.md")))

TABLE_FILES = ["docs/design.md", "passes/README.md"]
LINK_FILES = sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))) + [
    os.path.join(ROOT, name)
    for name in ("README.md", "python_api/README.md", "passes/README.md")
]

# Every optional pass on: optimizer offload, accumulation, fp16 with a
# dynamic loss scale, gradient clipping, qwZ; -o adds zero-export-plan.
EVERY_PASS = ("stage=3 offload-optimizer=cpu "
              "gradient-accumulation-steps=2 precision=fp16 loss-scale=0 "
              "gradient-clipping=1.0 zero-quantized-weights=true")


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def outside_code(text):
    """The lines of `text` that are not inside a fenced code block."""
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def cells(line):
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def pass_table(path, heading):
    """(pass, runs when) for each row of the first table under `heading`."""
    lines = list(outside_code(read(path)))
    starts = [i for i, line in enumerate(lines)
              if re.fullmatch(r"#+\s+" + re.escape(heading), line.strip())]
    assert starts, f"{path}: no heading '{heading}'"
    table = []
    for line in lines[starts[0] + 1:]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            table.append(cells(line))
        elif table:
            break
    assert len(table) > 2, f"{path}: no table under '{heading}'"
    header = [cell.lower() for cell in table[0]]
    assert "pass" in header and "runs when" in header, (path, header)
    name, when = header.index("pass"), header.index("runs when")
    rows = []
    for row in table[2:]:
        match = re.fullmatch(r"`(zero-[a-z0-9-]+)`", row[name])
        assert match, f"{path}, '{heading}': not a pass: {row[name]}"
        rows.append((match.group(1), row[when]))
    return rows


def compiled_passes(*flags):
    """The passes `zero-compile` runs, in order, from its report."""
    out = subprocess.run(
        [os.environ["ZEROSBP_COMPILE"], "--preset=tiny", "--world=2",
         "--stage=3", "--report=json", *flags],
        check=True, capture_output=True, text=True).stdout
    report = json.loads(out)
    # "capture" times the graph's construction; it is not a pass.
    return [entry["pass"] for entry in report["pass_ms"]
            if entry["pass"].startswith("zero-")]


def merged(every, pipelined):
    """`every`, with the passes only a pipelined compile runs inserted
    before the pass that follows them there."""
    order = list(every)
    for index in reversed(range(len(pipelined))):
        name = pipelined[index]
        if name not in order:
            after = pipelined[index + 1] if index + 1 < len(pipelined) \
                else None
            order.insert(order.index(after) if after else len(order), name)
    return order


PIPELINED = ("--world=4", "--pipeline-model-parallel-size=2",
             "--gradient-accumulation-steps=2")


def compile_with_plan(*flags):
    """compiled_passes with a plan file, which adds zero-export-plan."""
    with tempfile.TemporaryDirectory() as tmp:
        return compiled_passes(*flags, "-o", os.path.join(tmp, "model.zplan"))


CASES = {
    "Training graphs": {
        "every": lambda: merged(
            compile_with_plan("--pipeline=" + EVERY_PASS,
                              "--checkpoint-activations"),
            compile_with_plan("--stage=1", *PIPELINED)),
        "always": lambda: compiled_passes(),
    },
    "Inference graphs": {
        "every": lambda: merged(
            compile_with_plan("--eval", "--pipeline=precision=bf16 stage=3 "
                              "zero-quantized-weights=true"),
            compile_with_plan("--eval", "--stage=1", *PIPELINED)),
        "always": lambda: compiled_passes("--eval"),
    },
}


@pytest.fixture(scope="module")
def compiled():
    return {heading: {which: run() for which, run in runs.items()}
            for heading, runs in CASES.items()}


@pytest.mark.parametrize("path", TABLE_FILES)
@pytest.mark.parametrize("heading", sorted(CASES))
def test_pass_table_is_the_pipeline(compiled, path, heading):
    rows = pass_table(path, heading)
    documented = [name for name, _ in rows]
    assert documented == compiled[heading]["every"], (
        f"{path}, '{heading}': the table lists {documented}; a compile with "
        f"every optional pass runs {compiled[heading]['every']}")
    # "by default" rows run with the default config and may be turned off.
    always = [name for name, when in rows
              if when == "always" or when.startswith("by default")]
    assert always == compiled[heading]["always"], (
        f"{path}, '{heading}': the rows marked 'always' are {always}; a "
        f"compile with no optional pass runs {compiled[heading]['always']}")


def test_every_declared_pass_is_documented():
    declared = set(re.findall(r'Pass<"(zero-[a-z0-9-]+)"',
                              read("passes/Passes.td")))
    assert declared, "passes/Passes.td declares no pass"
    for path in TABLE_FILES:
        documented = {name for heading in CASES
                      for name, _ in pass_table(path, heading)}
        assert declared == documented, (
            f"{path}: missing {sorted(declared - documented)}, not declared "
            f"{sorted(documented - declared)}")


def github_anchor(heading):
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    """The anchors of the headings of the markdown file `path`."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    seen, result = {}, set()
    for line in outside_code(text):
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        anchor = github_anchor(match.group(1))
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        result.add(anchor if count == 0 else f"{anchor}-{count}")
    return result


def links(path):
    """(line number, target) of each inline link or image outside code."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        line = re.sub(r"`[^`]*`", "", line)
        for match in re.finditer(r"!?\[[^\]]*\]\(([^)\s]+)\)", line):
            yield number, match.group(1)


def test_option_table_is_the_def_file():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import option_table
    with open(os.path.join(ROOT, "docs", "compiler.md")) as f:
        text = f.read()
    table = option_table.table()
    assert len(option_table.rows()) > 40
    documented = re.search(r"^\| key \|.*?\n(?!\|)", text, re.S | re.M)
    assert documented, "docs/compiler.md has no option table"
    assert documented.group(0) == table, (
        "docs/compiler.md's option table differs from ConfigOptions.def; "
        "replace it with the output of python3 tests/python/option_table.py")


def test_link_checker_anchors():
    assert github_anchor("ZeRO stages and their formulas") == \
        "zero-stages-and-their-formulas"
    assert github_anchor("Numerics, as tested") == "numerics-as-tested"
    assert github_anchor("`zero-run`") == "zero-run"
    assert github_anchor("Stage-3 reuse distance") == "stage-3-reuse-distance"


@pytest.mark.parametrize("path", LINK_FILES,
                         ids=lambda p: os.path.relpath(p, ROOT))
def test_links_resolve(path):
    relative = os.path.relpath(path, ROOT)
    assert os.path.isfile(os.path.join(SOURCE, "WORKSPACE")), SOURCE
    broken = []
    for number, target in links(path):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file, _, anchor = target.partition("#")
        resolved = os.path.normpath(
            os.path.join(os.path.dirname(relative), file)) if file else relative
        where = os.path.join(SOURCE, resolved)
        if not os.path.exists(where):
            broken.append(f"{relative}:{number}: {target}: no {resolved}")
            continue
        if anchor and resolved.endswith(".md"):
            if anchor not in anchors(where):
                broken.append(
                    f"{relative}:{number}: {target}: no heading #{anchor} in "
                    f"{resolved}")
    assert not broken, "broken links:\n" + "\n".join(broken)
