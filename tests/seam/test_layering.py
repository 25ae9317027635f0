"""The layering holds by structure: no import cycle among fpgaprune's modules, counting imports inside functions
and modules named in strings; and nothing outside `frontends/` names a front end's module, in an import or a
string (front ends come in through the `fpgaprune.front_ends` entry points)."""

from import_graph import cycles, read_package


def test_no_import_cycle_counting_imports_in_functions_and_modules_named_in_strings():
    modules = read_package()
    assert len(modules) > 150 and "fpgaprune.framework" in modules
    found = cycles(modules)
    described = [
        "; ".join(f"{name} -> {', '.join(sorted(modules[name].imports & group))}" for name in sorted(group))
        for group in found
    ]
    assert not found, "\n".join(described)


def test_the_cycle_check_finds_a_cycle_through_a_string():
    """Not vacuous: a registry string naming a front end that imports the registry back is a cycle."""
    modules = read_package()
    modules["fpgaprune.framework"].imports.add("fpgaprune.frontends.keras3.front_end")
    found = cycles(modules)
    assert any({"fpgaprune.framework", "fpgaprune.frontends.keras3.front_end"} <= group for group in found)


def test_nothing_outside_the_front_ends_names_a_front_end_module_in_a_string():
    found = [
        f"{module.path.relative_to(module.path.parents[1])}:{line}: {text}"
        for module in read_package().values()
        if ".frontends" not in module.name
        for line, text in module.strings
        if text.startswith("fpgaprune.frontends")
    ]
    assert not found, "\n".join(found)


def test_the_built_in_front_ends_come_in_through_the_entry_points():
    from importlib.metadata import entry_points

    from fpgaprune.framework import ENTRY_POINTS, front_ends

    declared = {entry.value.split(":")[0] for entry in entry_points(group=ENTRY_POINTS)}
    assert "fpgaprune.frontends.qkeras.front_end" in declared
    names = [front_end.name for front_end in front_ends()]
    assert names[0] == "tf_keras + QKeras" and "Keras 3" in names
    orders = [front_end.asked_order for front_end in front_ends()]
    assert orders == sorted(orders)
