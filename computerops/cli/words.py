"""The words a command's help lists (persistence arms, recovery and compaction policies, serving arms, scripted
policies), read from the one place each vocabulary is defined, without importing it: those modules import pydantic,
which `computerops --help` does not (half its start-up). Each vocabulary's source is parsed (`ast`) and its tuple
evaluated from the constants, `Literal[...]`, `get_args(...)`, dict keys and `*` of other names it is written with;
tests/test_cli_errors.py checks every list equals the imported tuple."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The folder holding the top-level packages (the checkout, or site-packages)."""


@functools.cache
def _assignments(module: str) -> dict[str, ast.expr]:
    source = (ROOT / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8")
    found: dict[str, ast.expr] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            found[node.target.id] = node.value
    return found


def _evaluate(module: str, node: ast.expr) -> tuple[str, ...]:
    names = _assignments(module)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return (node.value,)
    if isinstance(node, ast.Name) and node.id in names:
        return _evaluate(module, names[node.id])
    if isinstance(node, ast.Starred):
        return _evaluate(module, node.value)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return tuple(word for element in node.elts for word in _evaluate(module, element))
    if isinstance(node, ast.Dict):
        return tuple(word for key in node.keys if key is not None for word in _evaluate(module, key))
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "Literal":
        return _evaluate(module, node.slice)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("get_args", "tuple", "frozenset") and len(node.args) == 1):
        return _evaluate(module, node.args[0])
    raise ValueError(f"{module}: cannot read words from {ast.unparse(node)}")


def words(module: str, name: str) -> tuple[str, ...]:
    """The words of `name` in `module` (a dotted module under ROOT), as the module would compute them."""
    return _evaluate(module, _assignments(module)[name])


def listed(module: str, name: str, sep: str = ", ") -> str:
    return sep.join(words(module, name))


PERSISTENCE = ("computerops.persistence.arms", "PERSISTENCE_ARMS")
RECOVERY = ("computerops.persistence.arms", "RECOVERY_POLICIES")
SOUND_RECOVERY = ("computerops.persistence.arms", "SOUND_RECOVERY")
COMPACTION = ("computerops.persistence.arms", "COMPACTION_POLICIES")
SERVING = ("computerops.serving_faults.arms", "SERVING_ARMS")
SCRIPTED = ("adapter.scripted.policies", "POLICY_NAMES")
NOISE = ("sites.kit.noise", "NOISE_KINDS")
VOCABULARIES = (PERSISTENCE, RECOVERY, SOUND_RECOVERY, COMPACTION, SERVING, SCRIPTED, NOISE)
"""(module, name) of every vocabulary a help lists."""
