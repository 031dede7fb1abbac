"""Immutable containers for the trajectory views handed to monitor programs.

A view is built from three kinds of values only:

* :class:`FrozenDict` for every mapping (a ``dict`` subclass, so item access,
  ``get``, ``keys``/``items``/``values``, ``in``, ``len`` and iteration run at C
  speed; keys are also readable as attributes: ``req.method == req["method"]``),
* ``tuple`` for every sequence,
* ``str``/``int``/``float``/``bool``/``None`` leaves.

Every mutating entry point of ``dict`` is overridden to raise
``TypeError("trajectory views are read-only")``; ``copy()`` and ``to_dict()``
return plain, mutable copies, so changing a copy can never change the view that
the next monitor program sees.

The restricted executor allowlists the exact types in :data:`VIEW_TYPES` for
attribute and item access (tuples and leaves are allowlisted there anyway).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NoReturn

_READ_ONLY = "trajectory views are read-only"


_MISSING = object()
_dict_get = dict.get
_dict_keys = dict.keys
_object_getattribute = object.__getattribute__


def _refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise TypeError(_READ_ONLY)


class FrozenDict(dict):
    """A read-only ``dict`` whose string keys double as attributes.

    Subclassing ``dict`` (rather than wrapping one) keeps reads on the C fast
    path; an empty ``__slots__`` means instances carry no ``__dict__``, so there
    is nowhere to hide state outside the mapping itself.
    """

    __slots__ = ()

    def __getattribute__(self, name: str) -> Any:
        # Fields are the hot path for monitor programs, so look them up first
        # (one C-level dict probe) unless the name is one of our own methods or
        # dunders: a JSON body with an "items" key must not shadow .items().
        if name in _OWN_NAMES:
            return _object_getattribute(self, name)
        value = _dict_get(self, name, _MISSING)
        if value is _MISSING:
            fields = ", ".join(sorted(k for k in _dict_keys(self) if isinstance(k, str))[:40])
            raise AttributeError(f"no field {name!r} (fields: {fields})")
        return value

    __setattr__ = _refuse
    __delattr__ = _refuse
    __setitem__ = _refuse
    __delitem__ = _refuse
    __ior__ = _refuse
    clear = _refuse
    pop = _refuse
    popitem = _refuse
    setdefault = _refuse
    update = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        # Values are frozen too, so the items are hashable whenever the leaves are.
        return hash(frozenset(self.items()))

    def __reduce__(self) -> tuple[Any, ...]:
        # The default dict-subclass pickling would call __setitem__.
        return (FrozenDict, (dict(self),))

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return self

    def copy(self) -> dict[str, Any]:  # type: ignore[override]
        """A plain, mutable, shallow ``dict`` copy (nested values stay frozen)."""
        return dict(self)

    def to_dict(self) -> dict[str, Any]:
        """A plain, mutable, deep copy: dicts and lists all the way down."""
        return thaw(self)


_OWN_NAMES = frozenset(dir(FrozenDict))

#: The container types a view is made of, for the sandbox's attribute/item allowlists.
VIEW_TYPES: tuple[type, ...] = (FrozenDict,)

_LEAF_TYPES = frozenset({str, int, float, bool, type(None)})
_LEAVES = (str, int, float, bool, type(None))


def freeze(value: Any) -> Any:
    """Deep-convert plain data into view values (FrozenDict / tuple / leaves).

    Sets become tuples sorted by ``repr`` (deterministic across processes);
    anything else unknown becomes its ``str``. Keys are kept as given (the
    view's own keys and parsed JSON keys are strings).
    """
    t = type(value)
    if t in _LEAF_TYPES or t is FrozenDict:
        return value
    if t is dict:
        # Leaves are the common case: skip the recursive call for them.
        return FrozenDict({k: v if type(v) in _LEAF_TYPES else freeze(v) for k, v in value.items()})
    if t is list or t is tuple:
        return tuple([v if type(v) in _LEAF_TYPES else freeze(v) for v in value])
    if isinstance(value, _LEAVES):
        return value
    if isinstance(value, Mapping):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    if isinstance(value, (set, frozenset)):
        return tuple(sorted((freeze(v) for v in value), key=repr))
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def thaw(value: Any) -> Any:
    """Deep-convert view values back into plain, mutable ``dict``/``list`` data."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


def frozen_items(pairs: Iterable[tuple[str, Any]]) -> FrozenDict:
    """Build a FrozenDict from already-frozen ``(key, value)`` pairs (no deep copy)."""
    return FrozenDict(pairs)
