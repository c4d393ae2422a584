"""The layering of docs/architecture.md: at run time a module imports only its own layer or lower ones."""

from __future__ import annotations

import ast
from pathlib import Path

import pytflite

SOURCE = Path(pytflite.__file__).parent

# lower number = lower layer; `core.types` (shared enums) sits below everything, errors and fidelity
# below the rest of core
LAYERS = {
    "core.types": 0,
    "errors": 1,
    "fidelity": 1,
    "core": 2,
    "model": 3,
    "ops": 4,
    "delegates": 5,
    "flex": 5,
    "interpreter": 6,
    "interpreter_builder": 6,
    "debug": 6,
    "tensor_listing": 6,
    "tensor_access": 6,
    "tools": 7,
    "batch": 7,
    "__init__": 8,
    "__main__": 8,
}


def _layer(module: tuple[str, ...]) -> int:
    dotted = ".".join(module)
    if dotted == "core.types":
        return LAYERS["core.types"]
    return LAYERS[module[0]]


def _runtime_imports(path: Path) -> list[tuple[int, tuple[str, ...]]]:
    """(line, absolute module parts under pytflite) of each relative import outside TYPE_CHECKING."""
    tree = ast.parse(path.read_text())
    guarded = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            guarded.update(id(n) for n in ast.walk(node))
    package = path.relative_to(SOURCE).parts[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level and id(node) not in guarded:
            base = package[: len(package) - (node.level - 1)]
            target = base + tuple(node.module.split(".") if node.module else ())
            if target:
                found.append((node.lineno, target))
    return found


def test_no_module_imports_a_layer_above_its_own():
    upward = []
    for path in sorted(SOURCE.rglob("*.py")):
        module = path.relative_to(SOURCE).with_suffix("").parts
        for line, target in _runtime_imports(path):
            if _layer(target) > _layer(module):
                upward.append(f"{'/'.join(module)}.py:{line} imports {'.'.join(target)}")
    assert upward == []


def test_no_module_imports_another_modules_private_names():
    """A name a module leaves private (a leading underscore) is its own: what siblings share is public."""
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                names = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                found += [f"{path.relative_to(SOURCE)}:{node.lineno} imports {name}" for name in names]
    assert found == []


# Underscored names that are public API all the same: namedtuple's, and LiteRT's Interpreter method that
# applications call (pytflite keeps it for drop-in use)
_PUBLIC_UNDERSCORED = {"_fields", "_replace", "_asdict", "_make", "_get_full_signature_list"}


def _private_names_defined(tree: ast.Module) -> set[str]:
    """The underscored names a module gives its own functions, classes, attributes and slots."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)  # __slots__ entries
    return {name for name in names if name.startswith("_")}


def test_no_module_reads_another_modules_private_attributes():
    """obj._name outside `self`/`cls` only where this module defines _name (its own class's state)."""
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        own = _private_names_defined(tree) | _PUBLIC_UNDERSCORED
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_")) or node.attr.startswith(
                "__"
            ):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            if node.attr not in own:
                found.append(f"{path.relative_to(SOURCE)}:{node.lineno} reads {ast.unparse(node)}")
    assert found == []
