"""The cases for one tool: valid inputs generated from its schema, then mutations of them."""

from __future__ import annotations

from dataclasses import dataclass

from ..protocol import CheckedTool
from .cases import VALID, Case
from .generate import TIME_BUDGET, derive_seed, generate_valid
from .mutate import mutations


@dataclass(frozen=True)
class Plan:
    """The cases to run on one tool, and notes on what could not be made."""

    cases: tuple[Case, ...]
    notes: tuple[str, ...] = ()


def plan_tool(tool: CheckedTool, *, per_kind: int, seed: int, budget: float = TIME_BUDGET) -> Plan:
    """Up to ``per_kind`` cases of each kind for ``tool``, the same for the same seed, its
    valid inputs generated in about ``budget`` seconds."""
    validator = tool.input_validator
    if validator is None or not tool.usable:
        problems = "; ".join(v.message for v in tool.violations) or "no usable inputSchema"
        return Plan((), (f"not checked: its definition was refused ({problems})",))
    schema = tool.definition.get("inputSchema")
    generated = generate_valid(
        schema,
        validator,
        count=per_kind,
        seed_value=derive_seed(seed, str(tool.name), VALID),
        budget=budget,
    )
    notes: tuple[str, ...] = (generated.note,) if generated.note else ()
    valid = tuple(
        Case(VALID, "", "generated from the inputSchema", value, "valid")
        for value in generated.inputs
    )
    invalid = tuple(mutations(schema, validator, generated.inputs, per_kind=per_kind))
    if not generated.inputs:
        notes += ("no invalid inputs either: they are made from valid ones",)
    return Plan(valid + invalid, notes)
