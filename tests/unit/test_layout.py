"""Issue 23: the house's layout rules, checked by reading the source (no import, no app).

- every `*.py` file a comment or docstring of shared/momor names exists (a renamed or removed
  module leaves no pointer to nowhere behind);
- every MOMOR_* variable is read in config.py, nowhere else (one place validates them at start);
- imports run one way, down the layers (README "Layout"): the composition root (app.py) and the
  Lambda bridge, dialects, api, routing, providers, store, then the core and plumbing; a module
  imports its own layer or one below, never one above (lazy and TYPE_CHECKING imports included);
- the README's "Where to add" recipes name what the code has: every file they point to, every
  member of the `Door` protocol and every `WireFacts` field.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from tests.docs_text import documentation

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "shared" / "momor"
SKIP = {".venv", ".sam-venv", "node_modules", ".git"}

EXTERNAL_FILES = {
    # Other projects' files the comments cite as the source of a shape: not Momor's to keep.
    "types/chat/completion_create_params.py", "types/chat/chat_completion.py", "chat_completion_chunk.py",
    "completion_usage.py", "types/responses/response_create_params.py", "easy_input_message_param.py",
    "response_reasoning_item_param.py", "response_function_tool_call_param.py", "response_input_image_param.py",
    "response_input_file_param.py", "types/responses/response_input_item_param.py", "types/responses/response.py",
    "response.py", "response_usage.py", "response_output_message.py", "response_reasoning_item.py",
    "response_function_tool_call.py", "_event.py",  # openai-python
    "types.py",  # google-genai
    "bootstrap.py", "/var/runtime/bootstrap.py",  # the AWS Lambda python runtime
}
PY_PATH = re.compile(r"(?<![\w/.-])([\w/.-]*\w\.py)\b")


def _source_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _repo_names() -> set[str]:
    return {p.name for p in ROOT.rglob("*.py") if not SKIP & set(p.relative_to(ROOT).parts)}


def _prose(path: Path) -> list[tuple[int, str]]:
    """The comments and string literals (docstrings among them) of one file, with their line."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return [(t.start[0], t.string) for t in tokens if t.type in (tokenize.COMMENT, tokenize.STRING)]


def _exists(named: str, where: Path, names: set[str]) -> bool:
    if "/" not in named:
        return named in names
    bases = [ROOT, PACKAGE, PACKAGE.parent, where.parent, *(d for d in PACKAGE.iterdir() if d.is_dir())]
    return any((base / named.lstrip("/")).exists() for base in bases)


def test_every_python_file_a_comment_names_exists():
    names = _repo_names()
    missing = [f"{path.relative_to(ROOT)}:{line}: {named}"
               for path in _source_files() for line, text in _prose(path)
               for named in PY_PATH.findall(text)
               if named not in EXTERNAL_FILES and not _exists(named, path, names)]
    assert not missing, "comments naming files that do not exist:\n" + "\n".join(missing)


def _strings(node: ast.expr | None) -> list[str] | None:
    """A str constant, or a tuple, list or set of them, as the strings it holds."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        held = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return held if len(held) == len(node.elts) else None
    return None


class _Module:
    """What a module's source binds: names to the strings they hold (a constant, a tuple of them, a
    loop variable over one) and the names bound to the environment itself (`env = os.environ`)."""

    def __init__(self, tree: ast.AST) -> None:
        self.values: dict[str, list[str]] = {}
        self.aliases: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in (t for t in node.targets if isinstance(t, ast.Name)):
                    if self.is_environ(node.value):
                        self.aliases.add(target.id)
                    elif (held := _strings(node.value)) is not None:
                        self.values[target.id] = held
        for node in ast.walk(tree):  # loop variables, once the names they loop over are known
            if isinstance(node, ast.comprehension | ast.For) and isinstance(node.target, ast.Name):
                over = node.iter
                held = _strings(over) or (self.values.get(over.id) if isinstance(over, ast.Name) else None)
                if held is not None:
                    self.values[node.target.id] = held

    def is_environ(self, node: ast.expr) -> bool:
        return ((isinstance(node, ast.Attribute) and node.attr == "environ")
                or (isinstance(node, ast.Name) and (node.id == "environ" or node.id in self.aliases)))

    def keys(self, node: ast.expr) -> list[str] | None:
        """The variable names an environment read asks for, where the source shows them."""
        if isinstance(node, ast.Name):
            return self.values.get(node.id)
        if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            return [str(node.values[0].value)]
        return _strings(node)

    def environment_reads(self, tree: ast.AST) -> list[tuple[int, ast.expr]]:
        """(line, key) of every `os.environ[...]`, `os.environ.get(...)` (pop, setdefault),
        `os.getenv(...)` and `... in os.environ`."""
        reads: list[tuple[int, ast.expr]] = []
        for node in ast.walk(tree):
            # `os.environ[X] = ...` writes (the CLI's --table pointing config.py at a table) read nothing.
            if isinstance(node, ast.Subscript) and self.is_environ(node.value) and not isinstance(node.ctx, ast.Store):
                reads.append((node.lineno, node.slice))
            elif isinstance(node, ast.Call) and node.args:
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                on_environ = isinstance(func, ast.Attribute) and self.is_environ(func.value)
                if name == "getenv" or (on_environ and name in ("get", "pop", "setdefault")):
                    reads.append((node.lineno, node.args[0]))
            elif (isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
                  and any(self.is_environ(c) for c in node.comparators)):
                reads.append((node.lineno, node.left))
        return reads


def momor_reads_outside_config() -> list[str]:
    found = []
    for path in _source_files():
        if path == PACKAGE / "config.py":
            continue
        tree = ast.parse(path.read_text())
        module = _Module(tree)
        for line, key in module.environment_reads(tree):
            named = module.keys(key)
            if named is None or any(n.startswith("MOMOR_") for n in named):  # one it cannot name counts too
                found.append(f"{path.relative_to(ROOT)}:{line}: {ast.unparse(key)} {named or ''}")
    return found


def test_every_momor_variable_is_read_in_config():
    found = momor_reads_outside_config()
    assert not found, "MOMOR_* read outside config.py (add a Config field instead):\n" + "\n".join(found)


LAYERS = ("entry", "dialects", "api", "routing", "providers", "store", "core")
"""Top to bottom: a module may import its own layer and those after it."""
LAYER_OF = {
    "momor.app": "entry",  # the composition root: the one module that imports every dialect
    "momor.lambda_stream": "entry",
    "momor.cli": "entry",  # the `momor` command line: keys, org, audit, records replay
    "momor.dialects": "dialects",
    "momor.api": "api",
    "momor.metrics": "api",  # the record's metrics: reads store.records
    "momor.routing": "routing",
    "momor.providers.registry": "core",  # the wires' facts, pure data: catalog.py reads the names
    "momor.providers": "providers",
    "momor.store": "store",
}


def layer_of(module: str) -> str:
    """The layer of `momor.x.y`: its longest prefix in LAYER_OF, else core."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in LAYER_OF:
            return LAYER_OF[".".join(parts[:end])]
    return "core"


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if package else parts), package


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every momor module `path` imports, anywhere in it."""
    name, package = _module_name(path)
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            # `from .m import x`: x is m's submodule or attribute, in m's layer either way
            found += [(node.lineno, f"{source}.{alias.name}".lstrip(".")) for alias in node.names]
    return [(line, module) for line, module in found if module == "momor" or module.startswith("momor.")]


def upward_imports() -> list[str]:
    upward = []
    for path in _source_files():
        name, _ = _module_name(path)
        mine = LAYERS.index(layer_of(name))
        for line, module in imports_of(path):
            if LAYERS.index(layer_of(module)) < mine:
                upward.append(f"{path.relative_to(ROOT)}:{line}: {layer_of(name)} imports {module} "
                              f"({layer_of(module)})")
    return upward


def test_imports_run_one_way_down_the_layers():
    upward = upward_imports()
    assert not upward, "imports against the layer order:\n" + "\n".join(upward)


def import_graph() -> dict[str, set[str]]:
    """Module -> the momor modules it imports (an imported name resolves to the module that holds it)."""
    files = {_module_name(path)[0]: path for path in _source_files()}

    def module_of(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    return {name: {m for _, imported in imports_of(path) if (m := module_of(imported)) not in (None, name)}
            for name, path in files.items()}


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every set of modules that import each other, directly or round a longer loop (Tarjan's
    strongly connected components, iteratively: a deep package does not hit the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    circles.append(sorted(members))
    return circles


def test_no_two_modules_import_each_other():
    # Issue 40: within a layer too, imports run one way (config.py and egress.py, breaker.py and
    # shared_health.py imported each other; lazy imports count, as in the layer check).
    circles = import_circles(import_graph())
    assert not circles, "modules that import each other:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_no_dialect_reaches_a_store_but_through_the_flow():
    # Issue 40: the Responses route read and wrote stored responses itself; it goes through
    # api/response_state.py now, as every other dialect goes through the flow.
    direct = [f"{name} imports {m}" for name, imported in import_graph().items() if layer_of(name) == "dialects"
              for m in imported if layer_of(m) == "store"]
    assert not direct, "dialects importing the store:\n" + "\n".join(direct)


def test_the_circle_scan_finds_a_circle():
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_circles({"a": {"b"}, "b": set()}) == []


def test_the_layer_scan_reads_relative_imports():
    # The scan itself: relative imports resolve to the modules the interpreter would load.
    modules = {module for _, module in imports_of(PACKAGE / "dialects" / "model_list.py")}
    assert {"momor.api.backend.Backend", "momor.dialects.error_shape.error_response"} <= modules
    assert "momor.store.aws_session.credentials" in {m for _, m in imports_of(PACKAGE / "store" / "aws.py")}
    assert layer_of("momor.dialects.openai.write") == "dialects" and layer_of("momor.events") == "core"
    assert layer_of("momor.providers.registry") == "core" and layer_of("momor.providers.kit") == "providers"


def _recipes() -> str:
    readme = documentation()
    start = readme.index("Where to add:")
    return readme[start:readme.index("\n\n", start)]


def test_every_file_the_recipes_name_exists():
    named = re.findall(r"`([\w./<>-]+\.(?:py|yaml|json))`", _recipes())
    places = [ROOT, PACKAGE, PACKAGE.parent, ROOT / "tests"]
    missing = [n for n in named if "<" not in n and not any((base / n).exists() for base in places)
               and not (PACKAGE / "providers" / n).exists()]
    assert named and not missing, f"the recipes name files that do not exist: {missing}"


def test_the_dialect_recipe_names_every_member_of_a_door():
    from momor.api.flow import Completes, Door

    # Completes: the optional hook of a door whose request is not whole as written
    members = {m for door in (Door, Completes) for m in vars(door) if not m.startswith("_")}
    members |= set(Door.__annotations__)
    recipe = _recipes().split("- **a wire**")[0]
    assert members and not {m for m in members if f"`{m}`" not in recipe}


def test_the_wire_recipe_names_every_registry_field():
    from momor.providers.registry import WireFacts

    recipe = _recipes().split("- **a wire**")[1]
    assert not {f for f in WireFacts.__slots__ if f != "name" and f"`{f}`" not in recipe}
