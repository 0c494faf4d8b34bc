"""The fast bounds check and the locating one must agree on every instance."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from strictmcp.schema.instance import check_instance, instance_shape, within_bounds

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
json_like = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(st.text(max_size=8), inner, max_size=5)
        | st.tuples(inner, inner)
    ),
    max_leaves=30,
)


@settings(max_examples=400, derandomize=True)
@given(json_like, st.integers(min_value=1, max_value=6), st.integers(min_value=1, max_value=300))
def test_fast_check_agrees_with_locating_check(instance: Any, depth: int, size: int) -> None:
    assert within_bounds(instance, depth, size) == (check_instance(instance, depth, size) is None)


finite_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=20,
)


@settings(max_examples=200, derandomize=True)
@given(finite_json)
def test_depth_is_the_nesting_the_bound_counts(instance: Any) -> None:
    depth, _ = instance_shape(instance, 100)
    assert check_instance(instance, max(depth, 1), None) is None
    if depth > 1:
        violation = check_instance(instance, depth - 1, None)
        assert violation is not None
        assert violation.code.value == "instance-too-deep"
