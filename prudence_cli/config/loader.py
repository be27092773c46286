"""A config file's text → the plain YAML document the parser reads (config/parse.py).

YAML allows what a config never needs and what makes a mistake silent or a machine
stall; each is a ConfigError that names the key path and the lines:

- a key given twice in one mapping (YAML keeps the last one silently, so a second
  `attacks:` block at the end of a file would replace the first);
- nesting deeper than MAX_DEPTH (a config is a few levels deep; thousands of brackets
  would exhaust Python's stack);
- anchors and aliases (`&name`, `*name`) are allowed, but the document they expand to
  may hold at most MAX_VALUES values: a "billion laughs" file of a few hundred bytes
  is refused while it is read, before anything is built from it;
- an alias inside the value it names (a recursive document);
- a file over MAX_BYTES (a config is a few hundred bytes; a big one is most likely the
  data file given in its place, which the pure-Python YAML reader would take minutes on).

A date that does not exist (`2011-13-45`) stays text, so that the key reading it says
what is wrong; any other value YAML cannot build (`!!int abc`) names its key and line.
Sizes are counted on the parse tree, where an alias is one shared node: a bomb costs
its own size, never its expansion.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import yaml
from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from prudence_cli.errors import SHOWN_WIDTH, ConfigError, shown

MAX_DEPTH = 32  # nested mappings and lists; the deepest key of a config is ~5 levels
MAX_VALUES = 10_000  # values of the document with every alias expanded
MAX_BYTES = 1_000_000  # a larger area goes in a GeoJSON file (select.area.geojson)
_MERGE = "tag:yaml.org,2002:merge"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"


def read_yaml(file: Path) -> object:
    """The YAML document of a config file; ConfigError naming the file (and the key
    path, or line) when it cannot be read or is not a document a config can be."""
    try:
        size = file.stat().st_size
        if size > MAX_BYTES:
            raise ConfigError(
                file,
                "",
                f"is {size:,} bytes, more than a config's {MAX_BYTES:,}: is it the config "
                "(a YAML file), not the data?",
            )
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(file, "", "no such config file") from None
    except IsADirectoryError:
        raise ConfigError(file, "", "is a folder, not a config file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(file, "", f"cannot read the config: {exc}") from None
    return load_yaml(text, file)


def load_yaml(text: str, file: Path) -> object:
    """The YAML document of `text`, read from `file` (named in errors)."""
    loader = _ConfigLoader(text, file)
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(file, "", f"not valid YAML{where}: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(file, "", f"not valid YAML: {exc}") from None
    except RecursionError:  # MAX_DEPTH stops nesting first; this is the last resort
        raise ConfigError(file, "", f"is nested too deeply (at most {MAX_DEPTH} levels)") from None
    finally:
        loader.dispose()


class _ConfigLoader(yaml.SafeLoader):
    """yaml.SafeLoader that tracks each node's key path while composing, to refuse
    repeated keys, deep nesting and alias expansions past the limits above."""

    def __init__(self, text: str, file: Path) -> None:
        super().__init__(text)
        self.file = file
        self._stack: list[str] = []  # key paths of the collections being composed
        self._sizes: dict[int, int] = {}  # id(node) → values under it, aliases expanded
        self._paths: dict[int, str] = {}  # id(node) → its first key path

    def fail(self, key: str, message: str) -> ConfigError:
        return ConfigError(self.file, key, message)

    def compose_node(self, parent: Node | None, index: object) -> Node | None:
        path = self._path_of(index)
        if self.check_event(AliasEvent):
            alias = self._next_event()
            target = self.anchors.get(alias.anchor)
            if target is not None and id(target) not in self._sizes:
                name = str(alias.anchor)[:40]
                raise self.fail(
                    path,
                    f"*{name} (line {_line(alias)}) is inside the value &{name} names: "
                    "a config cannot contain itself",
                )
            return super().compose_node(parent, index)  # type: ignore[arg-type]
        is_collection = self.check_event(MappingStartEvent, SequenceStartEvent)
        if is_collection and len(self._stack) >= MAX_DEPTH:
            outer = self._stack[min(3, len(self._stack) - 1)]  # the key, not 32 [0]s
            raise self.fail(
                f"{outer}…",
                f"is nested more than {MAX_DEPTH} levels deep (line "
                f"{_line(self._next_event())}); a config needs a few",
            )
        self._stack.append(path)
        try:
            node = super().compose_node(parent, index)  # type: ignore[arg-type]
        finally:
            self._stack.pop()
        if node is not None:
            self._count(node, path)
        return node

    def compose_mapping_node(self, anchor: object) -> MappingNode:
        node = super().compose_mapping_node(anchor)  # type: ignore[arg-type]
        first: dict[tuple[str, object], ScalarNode] = {}
        for key, _ in node.value:
            if not isinstance(key, ScalarNode) or key.tag == _MERGE:
                continue  # a `<<` merge may override keys; non-text keys fail later
            earlier = first.setdefault((key.tag, key.value), key)
            if earlier is not key:
                lines = sorted({earlier.start_mark.line + 1, key.start_mark.line + 1})
                where = (
                    f"lines {lines[0]} and {lines[1]}" if len(lines) == 2 else f"line {lines[0]}"
                )
                raise self.fail(
                    _join(self._stack[-1], key.value),
                    f"is given twice ({where}); YAML would keep only the last one: keep one",
                )
        return node

    def construct_object(self, node: Node, deep: bool = False) -> object:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, TypeError, AttributeError, OverflowError, LookupError) as exc:
            raise self.fail(
                self._paths.get(id(node), ""),
                f"{shown(node.value)} (line {node.start_mark.line + 1}) cannot be read as "
                f"{node.tag.rsplit(':', 1)[-1]}: {exc}",
            ) from None

    def construct_lenient_timestamp(self, node: ScalarNode) -> object:
        """A date or time; an impossible one (2011-13-45) as the text written."""
        try:
            stamp: dt.date = super().construct_yaml_timestamp(node)
        except (ValueError, OverflowError, AttributeError):
            return self.construct_scalar(node)
        return stamp

    def _next_event(self) -> Any:
        return self.peek_event()  # type: ignore[no-untyped-call]

    def _path_of(self, index: object) -> str:
        """The key path of the node composed at `index` of the current collection: a
        list position, a mapping key's node (its value's path) or None (the key)."""
        parent = self._stack[-1] if self._stack else ""
        if isinstance(index, int):
            return f"{parent}[{index}]"
        if isinstance(index, ScalarNode):
            return _join(parent, index.value)
        if isinstance(index, Node):
            return _join(parent, "?")
        return parent

    def _count(self, node: Node, path: str) -> None:
        """Record the node's expanded size; refuse the document past MAX_VALUES."""
        if id(node) in self._sizes:
            return
        self._paths.setdefault(id(node), path)
        size = 1
        if isinstance(node, SequenceNode):
            size += sum(self._sizes.get(id(child), 1) for child in node.value)
        elif isinstance(node, MappingNode):
            for key, value in node.value:
                size += self._sizes.get(id(key), 1) + self._sizes.get(id(value), 1)
        if size > MAX_VALUES:
            raise self.fail(
                path,
                f"holds more than {MAX_VALUES:,} values, each alias (*anchor) counted "
                f"as often as it is used (line {node.start_mark.line + 1}); a config "
                "needs far fewer",
            )
        self._sizes[id(node)] = size


_ConfigLoader.add_constructor(_TIMESTAMP, _ConfigLoader.construct_lenient_timestamp)


def _line(event: object) -> int:
    mark = getattr(event, "start_mark", None)
    return int(mark.line) + 1 if mark is not None else 0


def _join(prefix: str, key: object) -> str:
    text = str(key)
    if len(text) > SHOWN_WIDTH or not text.isprintable():
        text = shown(text)
    return f"{prefix}.{text}" if prefix else text
