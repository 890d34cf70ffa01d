"""The top level exports a short list; every name it used to export still resolves, with a warning that says where."""

import importlib
import warnings

import pytest

import harness_agui


def test_every_public_name_resolves_and_dir_lists_exactly_them() -> None:
    for name in harness_agui.__all__:
        assert getattr(harness_agui, name) is not None
    assert dir(harness_agui) == sorted(harness_agui.__all__)


OLD_NAMES = sorted(harness_agui._SOURCE | set(harness_agui._MOVED))


@pytest.mark.parametrize("name", OLD_NAMES)
def test_an_old_top_level_name_warns_and_is_the_object_at_its_new_home(name: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"harness_agui\.{name} moved to (harness_agui[\w.]+)\.{name};") as w:
        value = getattr(harness_agui, name)
    home = str(w[0].message).split(" moved to ", 1)[1].rsplit(f".{name};", 1)[0]
    assert getattr(importlib.import_module(home), name) is value
    assert name not in harness_agui.__all__


def test_a_name_that_never_existed_is_an_attribute_error_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="no attribute 'Nonesuch'"):
            harness_agui.Nonesuch  # noqa: B018
