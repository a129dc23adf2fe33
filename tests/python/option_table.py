"""docs/compiler.md's table of configuration options, made from the rows of
compiler/config/ConfigOptions.def (test_docs checks that the document holds
it exactly). Run from the repository root to print it:

    python3 tests/python/option_table.py
"""

import re
import sys

DEF = "compiler/config/ConfigOptions.def"
FIELDS = ["Field", "Type", "Member", "Default", "Key", "DeepSpeed", "Python",
          "Check", "Lo", "Hi", "When", "Help"]


def split_arguments(text):
    """The top-level comma-separated arguments of a macro call's text."""
    parts, depth, quoted, current = [], 0, False, ""
    for i, char in enumerate(text):
        if quoted:
            current += char
            if char == '"' and text[i - 1] != "\\":
                quoted = False
            continue
        if char == '"':
            quoted = True
        elif char in "({":
            depth += 1
        elif char in ")}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        current += char
    parts.append(current.strip())
    return parts


def rows(path=DEF):
    """Each row of the table, as a dict of FIELDS (strings as written)."""
    with open(path) as f:
        text = re.sub(r"//[^\n]*", "", f.read())
    found = []
    for match in re.finditer(r"^ZERO_[A-Z]+_OPTION\(", text, re.M):
        depth, end = 1, match.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        arguments = split_arguments(" ".join(text[match.end():end - 1]
                                             .split()))
        if len(arguments) != len(FIELDS):
            raise ValueError("%s: a row with %d arguments: %s" % (
                path, len(arguments), arguments[:2]))
        found.append(dict(zip(FIELDS, arguments)))
    return found


def unquoted(text):
    """The text of C++ string literals (adjacent ones joined); other
    literals as written."""
    if not text.startswith('"'):
        return text
    pieces = re.findall(r'"((?:[^"\\]|\\.)*)"', text)
    return "".join(pieces).replace('\\"', '"')


def default_of(row):
    value = unquoted(row["Default"])
    if value.startswith("ZeroStage::"):  # Written as its number.
        value = str(["DataParallel", "OptimizerStates", "Gradients",
                     "Parameters"].index(value.split("::")[1]))
    if "::" in value:  # An enumerator: OptimizerKind::Adam.
        value = value.split("::")[-1].lower()
    return "`%s`" % value if value else "(none)"


def table():
    lines = ["| key | DeepSpeed path or name | Python | default | meaning |",
             "| --- | --- | --- | --- | --- |"]
    for row in rows():
        python = unquoted(row["Python"])
        lines.append("| `%s` | `%s` | %s | %s | %s |" % (
            unquoted(row["Key"]), unquoted(row["DeepSpeed"]),
            "`%s`" % python if python else "", default_of(row),
            unquoted(row["Help"]).replace("|", "\\|")))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(table())
