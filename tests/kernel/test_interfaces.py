"""The read registry: a selector named by its dotted path stays inside the declaring app."""

import pytest

from kernel.interfaces import REGISTRY, interface


def test_a_dotted_selector_outside_the_declaring_app_is_refused():
    with pytest.raises(RuntimeError, match="outside tests.kernel.test_interfaces's app"):
        interface("probe-outside", help="探针", path="/probe")("memory.selectors.fact_list")
    assert "probe-outside" not in REGISTRY


def test_a_dotted_selector_inside_the_declaring_app_resolves_when_called():
    interface("probe-inside", help="探针", path="/probe")("tests.kernel.probe_selectors.probe")
    try:
        spec = REGISTRY["probe-inside"]
        assert spec.target == "tests.kernel.probe_selectors.probe"
        assert spec.call(book=None, args={}) == {"probe": True}
    finally:
        REGISTRY.pop("probe-inside")
