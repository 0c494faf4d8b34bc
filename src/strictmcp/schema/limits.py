"""Bounds that keep hostile schemas and instances from crashing or stalling the process."""

from __future__ import annotations

from dataclasses import dataclass

# jsonschema-rs refuses to copy values nested deeper than 255 levels into its errors.
MAX_INSTANCE_DEPTH = 200


@dataclass(frozen=True)
class Limits:
    """Every bound the engine enforces, each with a safe default.

    The defaults stop hostile input without getting in the way of real tool schemas, which are
    rarely deeper than a dozen levels or larger than a few hundred subschemas.

    - ``max_schema_depth``: nesting of JSON containers in a schema document.
    - ``max_subschemas``: objects and booleans in schema positions, counted over the document.
    - ``max_evaluation_paths``: ways validation can reach subschemas through references, per
      instance level; references to one place from many places multiply it (a schema whose
      every level refers twice to the next costs ``2 ** levels``).
    - ``max_instance_depth``: nesting of arrays and objects in an instance, far below the depth
      at which the native backend's recursion exhausts a thread's stack. When a caller passes
      ``json_size`` to skip measuring, depth is still checked wherever it matters for safety:
      for recursive schemas before validating, and for any schema before explaining a failure.
      (A schema that cannot recurse can look no deeper than itself.)
    - ``max_instance_size``: roughly the length of the instance's JSON text (characters of
      strings and keys, plus one per value).
    - ``max_issues``: issues reported for one instance; the rest are counted as truncated.
    - ``max_seconds``: wall time for one validation, enforced by backends that can stop midway
      (the reference backend). The native backend is bounded instead by linear-time regexes and
      the size and depth bounds above.
    - ``explain_budget``: for recursive schemas whose recursion branches, error *explanation*
      can cost ``branches ** depth`` even when the verdict is cheap; past this many estimated
      evaluations the verdict is returned with a single ``invalid-unexplained`` issue.
    - ``backtrack_limit``: steps a backtracking regex may take, only used when a caller opts in
      to lookaround and backreferences.
    """

    max_schema_depth: int = 64
    max_subschemas: int = 10_000
    max_evaluation_paths: int = 100_000
    max_instance_depth: int = 64
    max_instance_size: int = 4 * 1024 * 1024
    max_issues: int = 100
    max_seconds: float = 1.0
    explain_budget: int = 100_000
    backtrack_limit: int = 100_000

    def __post_init__(self) -> None:
        for name in (
            "max_schema_depth",
            "max_subschemas",
            "max_evaluation_paths",
            "max_instance_depth",
            "max_instance_size",
            "max_issues",
            "explain_budget",
            "backtrack_limit",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"Limits.{name} must be at least 1")
        if self.max_instance_depth > MAX_INSTANCE_DEPTH:
            raise ValueError(
                f"Limits.max_instance_depth can be at most {MAX_INSTANCE_DEPTH}: the native "
                "backend cannot copy deeper values when it reports a failure"
            )
        if self.max_seconds <= 0:
            raise ValueError("Limits.max_seconds must be positive")
