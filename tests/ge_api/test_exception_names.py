"""The ge-rs exception classes live under ``ge``'s public path: their ``__module__``, ``repr``,
tracebacks and pickles name ``ge.<Error>``, not the native extension."""

import pickle
import traceback

import pytest

import ge
import ge.errors
from ge import _native
from ge.error import GeError

NAMES = [n for n in ge.errors.__all__ if n != "GeError"]


def test_names_are_every_native_error() -> None:
    native = {n for n in dir(_native) if isinstance(getattr(_native, n), type)
              and issubclass(getattr(_native, n), GeError) and n != "GeError"}
    assert native == set(NAMES) and len(NAMES) == 9


@pytest.mark.parametrize("name", NAMES)
def test_class_is_under_ge(name: str) -> None:
    cls = getattr(ge, name)
    assert cls is getattr(_native, name) is getattr(ge.errors, name)
    assert cls.__module__ == "ge"
    assert cls.__qualname__ == name
    assert repr(cls) == f"<class 'ge.{name}'>"
    assert issubclass(cls, GeError) and issubclass(cls, RuntimeError)


@pytest.mark.parametrize("name", NAMES)
def test_traceback_and_repr_name_ge(name: str) -> None:
    cls = getattr(ge, name)
    try:
        raise cls("boom")
    except cls as e:
        text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        assert repr(e) == f"{name}('boom')"
    assert text.rstrip().endswith(f"ge.{name}: boom")
    assert "_native" not in text


@pytest.mark.parametrize("name", NAMES)
def test_pickles_by_public_name(name: str) -> None:
    cls = getattr(ge, name)
    data = pickle.dumps(cls("boom"))
    assert b"_native" not in data
    back = pickle.loads(data)
    assert type(back) is cls and str(back) == "boom"


def test_base_stays_ges() -> None:
    assert ge.GeError is GeError is _native.GeError is ge.errors.GeError
    assert GeError.__module__ == "ge.error"


def test_an_error_raised_by_the_extension_names_ge() -> None:
    """An error the Rust side raises (a shape inference failure) shows as ``ge.<Error>``."""
    from ge.es import GraphBuilder

    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 3])
    y = b.create_input(1, shape=[4, 5])
    with pytest.raises(ge.ShapeInferenceError) as info:
        x + y
    assert type(info.value).__module__ == "ge"
    text = "".join(traceback.format_exception(type(info.value), info.value, info.value.__traceback__))
    assert "ge.ShapeInferenceError: " in text and "_native" not in text.splitlines()[-1]
