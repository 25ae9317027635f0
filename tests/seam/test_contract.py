"""The front-end contract is the whole seam: every member of a front end that a module outside `frontends/` uses
is declared by the contract's protocols (`frontends/contract/`), read from the code: attributes of a front end
looked up in the registry (`front_end_of(x).member`, a name bound to such a lookup or to a loop over
`front_ends()`), of a front end handed down from where it was looked up (a parameter or attribute named as
BOUND_NAMES: `front`, `self.front`, ...), and names passed to getattr/hasattr on them. Nothing forwards undeclared
names."""

import ast

from import_graph import read_package

from fpgaprune.frontends.base import FrontEnd, declared_members

LOOKUPS = {
    "front_end_of",
    "owner",
    "bound",
    "library_front_end",
    "quantizing_front_end",
    "keras_front_end",
    "front_end_of_file",
    "front_end_of_suffix",
    "texts_front_end",
}
BOUND_NAMES = {"front", "front_end", "model_front", "qfront", "twin_front"}  # a front end resolved once, passed on


def _called(node) -> str | None:
    if isinstance(node, ast.Call):
        function = node.func
        return function.id if isinstance(function, ast.Name) else None
    return None


def _front_end_names(scope) -> set:
    """Names a scope binds to a front end: assigned from a lookup, or a loop over `front_ends()`."""
    names = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and _called(node.value) in LOOKUPS:
            names |= {target.id for target in node.targets if isinstance(target, ast.Name)}
        elif isinstance(node, (ast.For, ast.comprehension)) and _called(node.iter) == "front_ends":
            names |= {node.target.id} if isinstance(node.target, ast.Name) else set()
    return names


def members_used(tree: ast.Module) -> list:
    """(line, member) for each use of a front end's member in the module; a name counts as a front end in the
    function that binds it (and the functions inside it); a front end handed down (BOUND_NAMES) everywhere."""
    top = set(BOUND_NAMES)
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    used = {}
    for scope in [tree, *functions]:
        names = top | (_front_end_names(scope) if scope is not tree else set())
        for node in ast.walk(scope):
            if isinstance(node, ast.Attribute) and _is_front_end(node.value, names):
                used[id(node)] = (node.lineno, node.attr)
            elif _called(node) in ("getattr", "hasattr") and len(node.args) >= 2 and _is_front_end(node.args[0], names):
                name = node.args[1]
                used[id(node)] = (node.lineno, name.value if isinstance(name, ast.Constant) else "<computed>")
    return sorted(used.values())


def _is_front_end(node, names: set) -> bool:
    bound_attribute = isinstance(node, ast.Attribute) and node.attr in BOUND_NAMES  # `self.front`, `target.front`
    return (isinstance(node, ast.Name) and node.id in names) or bound_attribute or _called(node) in LOOKUPS


def outside_uses() -> list:
    """(module, line, member) for each use of a front end's member outside `frontends/` (the registry included)."""
    return [
        (module.name, line, member)
        for module in read_package().values()
        if ".frontends" not in module.name
        for line, member in members_used(module.tree)
    ]


def test_every_member_used_outside_the_front_ends_is_declared():
    declared, uses = declared_members(), outside_uses()
    assert len(uses) > 60  # the reader finds the uses (every stage asks its bound front end something)
    undeclared = [f"{module}:{line}: {member}" for module, line, member in uses if member not in declared]
    assert not undeclared, "members the contract does not declare:\n" + "\n".join(undeclared)


def test_the_reader_catches_an_undeclared_member():
    tree = ast.parse(
        "from fpgaprune.framework import front_end_of\n"
        "def f(layer, model, front):\n"
        "    fe = front_end_of(model)\n"
        "    return fe.secret_member(layer), front.another(layer), getattr(front_end_of(layer), 'third', None)\n"
        "def g(self, layer):\n"
        "    return self.front.fourth(layer)\n"
    )
    names = {member for _, member in members_used(tree)}
    assert {"secret_member", "another", "third", "fourth"} <= names and not names & declared_members()


def test_the_registry_forwards_nothing_undeclared():
    framework = read_package()["fpgaprune.framework"].tree
    forwarding = [
        node.name
        for node in ast.walk(framework)
        if isinstance(node, ast.ClassDef)
        and any(isinstance(f, ast.FunctionDef) and f.name in ("__getattr__", "__getattribute__") for f in node.body)
    ]
    assert not forwarding


def test_the_contract_is_a_few_small_protocols():
    from fpgaprune.frontends.contract import PROTOCOLS

    assert len(PROTOCOLS) == 7 and all(issubclass(FrontEnd, protocol) for protocol in PROTOCOLS)
    sizes = {protocol.__name__: len([n for n in vars(protocol) if not n.startswith("_")]) for protocol in PROTOCOLS}
    assert max(sizes.values()) <= 30, sizes
