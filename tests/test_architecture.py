"""The package's module structure, read from the source with ``ast`` (nothing is imported):

* the subpackages are layers, low to high (:data:`LAYERS`), below the top-level modules
  (``laser_repro.cli``, ``laser_repro.doctor``); a module imports only modules of its own layer or lower ones;
* the fairseq plugin (``--user-dir``, loaded by fairseq in every training process) imports only
  fairseq, torch, numpy, the standard library, its own modules and
  ``laser_repro.models.checkpoint_safety`` -- which imports only the standard library and torch;
* the modules of ``laser_repro`` import each other without a cycle;
* ``laser_repro.cli`` only assembles the parser: each subpackage defines its commands (``add_cli``).

Every import counts, also those inside functions (the package imports heavy modules lazily): a lazy
import is still a dependency, and a cycle through one (fairseq_bridge imported the plugin inside
its functions, the plugin imported fairseq_bridge) ties the modules together all the same."""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "laser_repro"
PLUGIN = "laser_repro.models.laser.fairseq_plugin"
CHECKPOINT_SAFETY = "laser_repro.models.checkpoint_safety"
USER_ERRORS = "laser_repro.core.errors"
#: the subpackages, low to high; the top-level modules (laser_repro.cli, laser_repro.doctor) rank above them all
LAYERS = ("core", "provenance", "data", "models", "evaluation", "reporting", "config", "workflow")


def _modules() -> dict[str, Path]:
    """Dotted name -> file of every module of the package (a package is its __init__.py)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(name: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import statement of a module, wherever it stands;
    ``from X import a, b`` gives ``X.a`` / ``X.b`` where those are modules of the package, else ``X``."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            subs = [f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in MODULES]
            out += [(node.lineno, m) for m in subs] or [(node.lineno, module)]
    return out


def _internal(module: str) -> str | None:
    """The package module that ``import module`` runs (its longest prefix that is one), or None."""
    while module and module not in MODULES:
        module = module.rpartition(".")[0]
    return module or None


def _layer(module: str) -> int:
    """Rank of a package module: the index of its subpackage in :data:`LAYERS`, ``len(LAYERS)`` for a
    top-level module (laser_repro.cli, laser_repro.doctor)."""
    sub = module.split(".")[1]
    return LAYERS.index(sub) if sub in LAYERS else len(LAYERS)


def _layer_name(module: str) -> str:
    rank = _layer(module)
    return LAYERS[rank] if rank < len(LAYERS) else "top level"


def _layer_violations(imports_of) -> list[str]:
    """``file:line: imported module (layer imports layer)`` of every import, by a package module, of a
    module of a higher layer; ``imports_of``: module -> its (line, imported module) (:func:`_imports`).
    The top-level package itself (``import laser_repro``: its version) is below every layer: its
    __init__ imports nothing."""
    bad = []
    for name in MODULES:
        if name == "laser_repro":
            continue
        for line, imported in imports_of(name):
            target = _internal(imported)
            if target and target != "laser_repro" and _layer(target) > _layer(name):
                bad.append((MODULES[name].relative_to(SRC), line, imported, name, target))
    return [f"{path}:{line}: {imported} ({_layer_name(name)} imports {_layer_name(target)})"
            for path, line, imported, name, target in sorted(bad)]


def test_every_subpackage_is_a_layer():
    subpackages = {name.split(".")[1] for name, path in MODULES.items()
                   if name.count(".") and path.relative_to(PACKAGE).parts[1:]}
    assert subpackages == set(LAYERS), f"subpackages {sorted(subpackages)} vs layers {LAYERS}"
    assert not [m for _, m in _imports("laser_repro") if _internal(m)], "laser_repro/__init__.py imports the package"


def test_imports_point_down_the_layers():
    bad = _layer_violations(_imports)
    assert not bad, (f"imports of a higher layer (layers, low to high: {' < '.join(LAYERS)} < top level):\n"
                     + "\n".join(bad))


def test_the_layer_check_finds_an_upward_import():
    def with_one_more(name):
        return _imports(name) + ([(1, "laser_repro.evaluation.xsim")] if name == "laser_repro.core.textio" else [])

    added = set(_layer_violations(with_one_more)) - set(_layer_violations(_imports))
    assert added == {"laser_repro/core/textio.py:1: laser_repro.evaluation.xsim (core imports evaluation)"}
    assert _layer("laser_repro.cli") == _layer("laser_repro.doctor") == len(LAYERS)
    assert _layer("laser_repro.config.plan") > _layer("laser_repro.reporting.tables") > _layer("laser_repro.core.errors")


def _allowed_in_plugin(module: str) -> bool:
    top = module.split(".")[0]
    return (top in sys.stdlib_module_names or top in ("fairseq", "torch", "numpy")
            or module == PLUGIN or module.startswith(PLUGIN + ".") or module == CHECKPOINT_SAFETY)


def test_the_plugin_imports_only_fairseq_torch_numpy_stdlib_itself_and_checkpoint_safety():
    plugin = [m for m in MODULES if m == PLUGIN or m.startswith(PLUGIN + ".")]
    assert len(plugin) >= 4, plugin  # __init__, laser_lstm, laser_task, laser_criterion
    bad = [f"{MODULES[m].relative_to(SRC)}:{line}: {imported}"
           for m in plugin for line, imported in _imports(m) if not _allowed_in_plugin(imported)]
    assert not bad, "the fairseq plugin imports other modules:\n" + "\n".join(bad)
    # and what it may import of the package stays a leaf: the standard library, torch and the user-error
    # type (laser_repro.core.errors), which imports the standard library only
    leaf = [f"{imported} (line {line})" for line, imported in _imports(CHECKPOINT_SAFETY)
            if imported.split(".")[0] not in sys.stdlib_module_names and imported.split(".")[0] != "torch"
            and imported not in ("__future__", USER_ERRORS)]
    assert not leaf, f"{CHECKPOINT_SAFETY} must import only the standard library, torch and {USER_ERRORS}: {leaf}"
    errors = [f"{imported} (line {line})" for line, imported in _imports(USER_ERRORS)
              if imported.split(".")[0] not in sys.stdlib_module_names and imported != "__future__"]
    assert not errors, f"{USER_ERRORS} must import only the standard library: {errors}"


def _graph() -> dict[str, set[str]]:
    """module -> the package modules its imports run: the imported module and its packages (their
    __init__ runs first), except the importer's own packages (a package importing its submodules is
    not a cycle) and the top-level package (its __init__ imports nothing)."""
    graph = {}
    for name in MODULES:
        own = {name.rsplit(".", k)[0] for k in range(name.count(".") + 1)}
        deps = set()
        for _, imported in _imports(name):
            target = _internal(imported)
            while target and target != "laser_repro":
                if target not in own:
                    deps.add(target)
                target = target.rpartition(".")[0]
        graph[name] = deps
    return graph


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                return path[path.index(dep):] + [dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_import_cycle_among_the_package_modules():
    graph = _graph()
    assert "laser_repro.models.laser.fairseq_bridge" in graph and graph["laser_repro.models.laser.fairseq_bridge"], graph
    cycle = _find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_check_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert _find_cycle(graph) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None



def test_cli_only_assembles_the_subcommands_of_the_subpackages():
    """The commands live in the subpackage that owns their step (``add_cli(sub)``, ``cmd_*``);
    ``laser_repro.cli`` builds the top-level parser from them and runs the chosen one."""
    path = MODULES["laser_repro.cli"]
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 120, f"{path.relative_to(SRC)}: {len(text.splitlines())} lines"
    functions = [node.name for node in ast.walk(ast.parse(text, str(path)))
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    assert not [f for f in functions if f.startswith("cmd_")], functions
    assert {"build_parser", "main"} <= set(functions), functions

def test_plugin_nli_classes_are_the_xnli_labels():
    pytest.importorskip("fairseq")
    from laser_repro.models.laser.fairseq_plugin.laser_lstm import NLI_NUM_CLASSES
    from laser_repro.data.nli_labels import XNLI_LABELS

    assert NLI_NUM_CLASSES == len(XNLI_LABELS) == 3


# ---- the rule files hold rules: their Python is in laser_repro.workflow ----------------------------------------
RULE_FILES = sorted((SRC.parent / "workflow").glob("**/*.smk")) + [SRC.parent / "workflow" / "Snakefile"]


def _multi_line_lambdas(text: str) -> list[int]:
    """Line numbers of a ``lambda`` whose expression goes on past its line: brackets left open (outside
    strings), or a next line that continues it (deeper, not a new ``key=`` / ``key:``; or a bare
    if / else / for)."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        if "lambda" not in line:
            continue
        rest = re.sub(r"\"[^\"]*\"|'[^']*'", "", line[line.index("lambda"):])  # brackets in strings do not count
        depth = 0
        for ch in rest:
            depth += (ch in "([{") - (ch in ")]}")
            if depth < 0:  # the bracket around the lambda closed: its expression ended
                break
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        indent, next_indent = len(line) - len(line.lstrip()), len(nxt) - len(nxt.lstrip())
        continued = nxt.strip() and ((next_indent > indent and not re.match(r"\s*(\w+\s*=|\w+:|#)", nxt))
                                     or (next_indent == indent and re.match(r"\s*(if|else|for)\b", nxt)))
        if depth > 0 or continued:
            found.append(i + 1)
    return found


def test_rule_files_define_no_functions_and_only_one_line_lambdas():
    problems = []
    for path in RULE_FILES:
        text = path.read_text(encoding="utf-8")
        problems += [f"{path.name}:{n}: def" for n, line in enumerate(text.splitlines(), 1) if re.match(r"\s*def ", line)]
        problems += [f"{path.name}:{n}: multi-line lambda" for n in _multi_line_lambdas(text)]
    assert not problems, "rule files hold rules and one-line lambdas (move the logic into laser_repro.workflow): " + \
        ", ".join(problems)


def test_the_lambda_check_finds_a_multi_line_lambda():
    assert _multi_line_lambdas('x=lambda w: [a for a in\n    b],\ny=lambda w: f"{w.a}",\n') == [1]
    assert _multi_line_lambdas('x=lambda w: "a"\n    if w.b else "",\n') == [1]
    assert _multi_line_lambdas('x=lambda w: "(",\ny=1,\n') == []
