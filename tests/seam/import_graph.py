"""fpgaprune's modules and what each imports, read from the code alone (nothing imported): import statements at
module level and inside functions, and modules named in strings ("fpgaprune.x.y", "fpgaprune.x.y:NAME"), the
way `../shared/tools/seam_figures.py` counts them."""

import ast
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fpgaprune"
HEAVY = {"tensorflow", "keras", "tf_keras", "qkeras", "torch", "brevitas", "hgq", "hls4ml", "da4ml", "ray", "onnx"}


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    imports: set = field(default_factory=set)  # fpgaprune modules, from statements anywhere and from strings
    in_functions: list = field(default_factory=list)  # (line, [fpgaprune modules]) of imports inside functions
    strings: list = field(default_factory=list)  # (line, text) of strings that name an fpgaprune module


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(node: ast.ImportFrom, current: str, is_package: bool) -> list:
    if node.level == 0:
        base = node.module or ""
    else:
        parts = current.split(".")
        keep = len(parts) - node.level + (1 if is_package else 0)
        base = ".".join(parts[:keep] + ([node.module] if node.module else []))
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def _function_imports(tree: ast.Module) -> set:
    inside = set()
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside |= {id(n) for n in ast.walk(function) if isinstance(n, (ast.Import, ast.ImportFrom))}
    return inside


def read_package() -> dict:
    """{dotted name: Module} for every module of the package."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        modules[module_name(path)] = Module(module_name(path), path, ast.parse(path.read_text()))
    for module in modules.values():
        is_package, inside = module.path.name == "__init__.py", _function_imports(module.tree)
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ImportFrom):
                targets = _targets(node, module.name, is_package)
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("fpgaprune."):
                targets = [node.value.split(":")[0]]
                if targets[0] in modules:
                    module.strings.append((node.lineno, node.value))
            else:
                continue
            hits = {t for t in targets if t in modules} - {module.name}
            module.imports |= hits
            if hits and id(node) in inside:
                module.in_functions.append((node.lineno, sorted(hits)))
    return modules


def imports_a_framework(module: Module) -> bool:
    """Whether the module's top level imports a framework (or hls4ml, da4ml, Ray)."""
    for node in module.tree.body:
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        if any(name.split(".")[0] in HEAVY for name in names):
            return True
    return False


def cycles(modules: dict) -> list:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on, stack, found, counter = {}, {}, set(), [], [], [0]
    for start in modules:
        if start in index:
            continue
        work = [(start, iter(sorted(modules[start].imports)))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(modules[child].imports))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(group)
    return found
