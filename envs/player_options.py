"""The options of a player kind, each declared once: its type, default, bounds or choices, group and line.

A kind's options are a frozen dataclass that subclasses `PlayerOptions` and declares each field with `option`:

    @dataclass(frozen=True)
    class MineOptions(PlayerOptions):
        KIND: ClassVar[str] = "mine"
        depth: int = option(3, "plies searched", bounds=(1, 30))

``MineOptions(depth=4)`` (keywords), ``MineOptions.from_keywords({...})`` and ``MineOptions.from_spec({"depth":
"4"})`` (a spec's strings) run the same checks, and a refusal is one `PlayerSpecError` line that names the kind,
the key and what it accepts: ``player 'mine': depth=0 must lie in [1, 30]``. `PlayerOptions.table` writes the
Markdown table of the options that the docs show. The kit's ``alphabeta`` and ``checkpoint`` kinds declare theirs
this way (agents/alphabeta/options.py, agents/alphazero/player/options.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any, ClassVar, Mapping, Optional, Self

from envs.config import check_choice, check_range, shown
from envs.players import PlayerSpecError

OptionBounds = tuple[float, Optional[float]]
"""``(least, most)`` of a numeric option, both inclusive; a most of None: no most."""


def option(
    default: Any,
    about: str,
    *,
    group: str = "",
    bounds: Optional[OptionBounds] = None,
    choices: tuple[str, ...] = (),
    shown_default: str = "",
) -> Any:
    """A field of a `PlayerOptions` dataclass: its default, the line the table shows, and its group, bounds or
    choices, and its default as the table writes it when that is not the value itself (`shown_default`)."""
    meta = {"group": group, "about": about, "bounds": bounds, "choices": choices, "default": shown_default}
    return field(default=default, metadata=meta)


class PlayerOptions:
    """The base of a player kind's options dataclass: the checks of every declared field (`__post_init__`), the
    readers of a spec's strings and of keywords, and the docs table. A subclass sets `KIND` (and `GROUPS`, the
    groups in the table's order; `RENAMED`, old names refused with their new one) and adds its checks that
    involve several options after ``super().__post_init__()``."""

    KIND: ClassVar[str] = ""
    """The player kind, as a spec names it."""
    GROUPS: ClassVar[tuple[str, ...]] = ("",)
    """The options' groups, in the order of the table."""
    RENAMED: ClassVar[dict[str, str]] = {}
    """Old option names -> their new names: an old one is refused with a line that names the new one."""

    @classmethod
    def where(cls) -> str:
        """How every refusal of an option starts: ``player 'alphabeta': ``."""
        return f"player {cls.KIND!r}: "

    def __post_init__(self) -> None:
        where = self.where()
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value is None:
                continue
            kind, bounds = _kind(f), f.metadata["bounds"]
            wanted = {"bool": "true or false", "int": "an integer", "float": "a number", "str": "a string"}[kind]
            if bounds is not None:
                wanted += f" {_range(bounds)}"
            if kind == "bool":
                fits = isinstance(value, bool)
            elif kind == "int":
                fits = not isinstance(value, bool) and isinstance(value, int)
            elif kind == "float":
                fits = not isinstance(value, bool) and isinstance(value, (int, float))
            else:
                fits = isinstance(value, str)
            if not fits:
                raise PlayerSpecError(f"{where}{f.name}={shown(value)} must be {wanted}")
            if bounds is not None:
                check_range({f.name: value}, where, PlayerSpecError, **{f.name: bounds})
            if f.metadata["choices"]:
                check_choice({f.name: value}, where, PlayerSpecError, **{f.name: f.metadata["choices"]})

    @classmethod
    def from_keywords(cls, keywords: Mapping[str, Any]) -> Self:
        """The options of keyword arguments (a player's constructor): an unknown or renamed key is refused in one
        line, as `from_spec` refuses it."""
        cls._check_keys(keywords)
        return cls(**keywords)

    @classmethod
    def from_spec(cls, options: Mapping[str, str]) -> Self:
        """The options of a spec's ``key=value`` strings: numbers and ``true``/``false`` read as such (a value
        that does not read is passed on as it is, for the check to name); an unknown key is refused."""
        cls._check_keys(options)
        fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        return cls(**{key: _read(_kind(fields[key]), text) for key, text in options.items()})

    @classmethod
    def _check_keys(cls, keys: Mapping[str, Any]) -> None:
        known = sorted(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
        for key in keys:
            if key in cls.RENAMED:
                raise PlayerSpecError(f"player {cls.KIND!r} has no option {key}; it is called {cls.RENAMED[key]} now")
        unknown = sorted(set(keys) - set(known))
        if unknown:
            raise PlayerSpecError(
                f"player {cls.KIND!r} has no option(s) {', '.join(unknown)}; known: {', '.join(known)}"
            )

    @classmethod
    def table(cls) -> str:
        """The Markdown table of the options (name, group, default, bounds, what it is), in the order of
        `GROUPS`, as the docs show it."""
        rows = ["| option | group | default | bounds | what it is |", "| --- | --- | --- | --- | --- |"]
        fields = sorted(dataclasses.fields(cls), key=lambda f: cls.GROUPS.index(f.metadata["group"]))  # type: ignore[arg-type]
        for f in fields:
            meta = f.metadata
            default = meta["default"] or f"`{_written(f.default)}`"
            if meta["choices"]:
                bounds = ", ".join(f"`{c}`" for c in meta["choices"])
            elif meta["bounds"] is not None:
                bounds = _range(meta["bounds"]).removeprefix("in ")
            elif _kind(f) == "bool":
                bounds = "`true`, `false`"
            else:
                bounds = ""
            rows.append(f"| `{f.name}` | {meta['group']} | {default} | {bounds} | {meta['about']} |")
        return "\n".join(rows) + "\n"

    @classmethod
    def option_bounds(cls, name: str) -> OptionBounds:
        """The (least, most) of a numeric option (None: no most), as the options check it."""
        bounds = next(f.metadata["bounds"] for f in dataclasses.fields(cls) if f.name == name)  # type: ignore[arg-type]
        if bounds is None:
            raise KeyError(f"the {cls.KIND} option {name!r} has no bounds")
        return bounds


def _kind(f: dataclasses.Field[Any]) -> str:
    """A field's type without Optional: ``bool``, ``int``, ``float`` or ``str``."""
    text = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    if text.startswith("Optional[") and text.endswith("]"):
        text = text[len("Optional[") : -1]
    if text not in ("bool", "int", "float", "str"):
        raise TypeError(f"the option {f.name} is of type {text}; options are bool, int, float or str")
    return text


def _read(kind: str, text: str) -> Any:
    """A spec's string as an option of `kind`, or the string itself when it does not read as one."""
    try:
        if kind == "bool":
            return {"true": True, "false": False}.get(text.lower(), text)
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
    except ValueError:
        return text
    return text


def _range(bounds: OptionBounds) -> str:
    """Bounds as a message and the table write them: ``in [1, 48]`` or ``>= 0``."""
    low, high = bounds
    return f"in [{_written(low)}, {_written(high)}]" if high is not None else f">= {_written(low)}"


def _written(value: Any) -> str:
    """A default or a bound as the table writes it: ``true``/``false``, a whole number in full, else ``:g``."""
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)
