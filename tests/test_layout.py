"""The product's modules: the layers point one way and no module imports itself back.

Every import counts, at any depth of the code: an import inside a function (a lazy import)
closes a circle as surely as one at the top of a module.
"""

import ast
import glob
import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Each layer may import only the layers before it (../shared/DESIGN.md, "Layout").
LAYERS = [{"seq2seq", "data_pipeline"}, {"decode"}, {"lab", "training"}, {"server"},
          {"train", "serve"}]
PACKAGES = set().union(*LAYERS)


def _modules():
    """{module name: path} of every module of the product."""
    paths = glob.glob(os.path.join(REPO, "*", "*.py")) + glob.glob(os.path.join(REPO, "*.py"))
    modules = {}
    for path in paths:
        name = os.path.relpath(path, REPO)[:-3].replace(os.sep, ".")
        if name.split(".")[0] in PACKAGES:
            modules[name[:-len(".__init__")] if name.endswith(".__init__") else name] = path
    return modules


def _imports(path, modules):
    """The product modules that the module at `path` imports anywhere in its code."""
    package = os.path.relpath(os.path.dirname(path), REPO).replace(os.sep, ".")
    found = set()
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's own package
                base = ".".join(filter(None, [package, base]))
            # `from decode import beam_search` needs the module; `from decode import DECODERS`,
            # the package's __init__
            names = ["%s.%s" % (base, alias.name) if "%s.%s" % (base, alias.name) in modules
                     else base for alias in node.names]
        else:
            continue
        found.update(name for name in names if name in modules)
    return found


def test_the_layers_point_one_way():
    modules = _modules()
    for index, layer in enumerate(LAYERS[:-1]):
        above = set().union(*LAYERS[index + 1:])
        for name, path in modules.items():
            if name.split(".")[0] in layer:
                wrong = {found for found in _imports(path, modules)
                         if found.split(".")[0] in above}
                assert not wrong, "%s imports %s, a later layer" % (name, sorted(wrong))


def test_no_module_imports_itself_back():
    modules = _modules()
    graph = {name: _imports(path, modules) - {name} for name, path in modules.items()}
    done, path = set(), []

    def visit(name):
        if name in path:
            circle = path[path.index(name):] + [name]
            raise AssertionError("an import circle: %s" % " -> ".join(circle))
        if name in done:
            return
        path.append(name)
        for imported in sorted(graph[name]):
            visit(imported)
        path.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)
