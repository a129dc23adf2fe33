"""The zerosbp package imports in layers: every module imports what it needs
at its top, and no module imports one that imports it back. A circle
(the tracing layer reaching up to nn, or nn up to the modules built on it)
would hide behind imports inside functions, so none are allowed."""

import ast
import os

PACKAGE = os.path.join("python_api", "zerosbp")


def modules():
    for root, _, files in os.walk(PACKAGE):
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.join(root, name)


def test_no_package_import_inside_a_function():
    local = []
    for path in modules():
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef,
                                         ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.ImportFrom) and node.level > 0:
                    local.append("%s:%d: from %s%s" % (
                        path, node.lineno, "." * node.level,
                        node.module or ""))
    assert local == []


def test_no_import_circle():
    """The graph of top-level relative imports has no cycle."""
    graph = {}
    for path in modules():
        name = os.path.relpath(path, "python_api")[:-3].replace(os.sep, ".")
        if name.endswith(".__init__"):
            name = name[:-len(".__init__")]
        package = name if path.endswith("__init__.py") else \
            name.rsplit(".", 1)[0]
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        targets = set()
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                if node.module:
                    targets.add(".".join(base + node.module.split(".")))
                else:
                    targets.update(".".join(base + [alias.name])
                                   for alias in node.names)
        graph[name] = targets
    # A package's __init__ may import its submodules; a cycle through it is
    # one only if a submodule imports the package's __init__ back, which
    # relative imports of the package itself would show.
    state = {}

    def visit(node, path):
        state[node] = "open"
        for target in graph.get(node, ()):
            if target not in graph:
                continue
            if state.get(target) == "open" and not node.startswith(
                    target + ".") and not target.startswith(node + "."):
                raise AssertionError("import circle: " +
                                     " -> ".join(path + [target]))
            if target not in state:
                visit(target, path + [target])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
