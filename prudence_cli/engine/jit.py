"""The counting kernels, and how they run: as Python, or compiled by numba.

A kernel is a plain Python function over arrays, marked `@kernel` (or
`@kernel(parallel=True)`, its loops over `prange`). It runs in one of two ways:

- **as Python**: the function itself, called by the interpreter. Nothing to import,
  nothing to compile: on a few thousand instances it finishes before numba would have
  loaded.
- **compiled**: numba compiles it (`njit(cache=True)`, so once per machine, into numba's
  cache) and every later call in the process runs the machine code. Importing numba and
  loading a kernel from its cache cost about half a second in a fresh process; compiling
  on a new machine costs seconds per kernel.

`choose(work)` decides before each count, from the work done as Python so far in the
process plus this count's (the engine's cost — instances enumerated, candidates checked —
weighed by what each costs in Python, about 3 µs a unit):

- under `PYTHON_WORK` (about a third of a second): Python;
- above it, compiled when numba's cache already holds the kernels (the machine has
  compiled them before, or `python -m prudence_cli.warm` ran), else Python until
  `COMPILE_WORK` (about half a minute, what compiling a level's kernels takes);
- once compiled, the process stays compiled.

Both ways run the same source on the same arrays, so they give the same numbers (the
tests run both against the reference definitions). A few kernels whose loops run per
element have a Python way of their own, with numpy's loops over whole arrays, which
their callers take when the kernel would run as Python (`runs_compiled`): enumerating
subsets and queries, counting the supports of a key group and the least support of an
owner (`vectorized.py`); tests/engine/test_orders.py holds each equal to its kernel,
output for output. `PRUDENCE_KERNELS=compiled` (or `python`) in the environment fixes the choice.

The kernel modules (`kernels`, `group_kernels`, `enumeration_kernels`) are reached
through `compiled`, which imports each on first use.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, overload

__all__ = [
    "COMPILE_WORK",
    "PYTHON_WORK",
    "Kernel",
    "adopt",
    "choose",
    "is_compiled",
    "runs_compiled",
    "kernel",
    "on_compile",
    "prange",
    "running",
    "set_threads",
    "threads",
    "use_compiled",
]

# Counting work (the engine's cost weighed into units of about 3 µs as Python:
# `core._cost`) that a process runs as Python: below PYTHON_WORK, less than importing
# numba and loading its cached kernels takes (benchmarks/startup.py measures both); below
# COMPILE_WORK when the kernels are not in numba's cache yet, less than compiling them.
PYTHON_WORK = 100_000
COMPILE_WORK = 10_000_000
MODES = ("auto", "python", "compiled")

prange = range  # a kernel's parallel loop: numba's prange once compiled
F = TypeVar("F", bound=Callable[..., Any])


class _State:
    compiled = False  # kernel calls run compiled
    forced: str | None = None  # "python" or "compiled" inside `running`
    interpreted = 0  # work run as Python so far
    pending = False  # compiled if the next kernel called is in numba's cache
    threads: int | None = None  # what set_threads asked for
    notice: Callable[[], None] | None = None  # told once before numba first compiles


_state = _State()


class Kernel:
    """A kernel's Python function, and its numba dispatcher once compiled."""

    def __init__(self, function: Callable[..., Any], parallel: bool) -> None:
        self.py_func = function
        self.parallel = parallel
        self._dispatcher: Any = None
        self._looked_up = False  # whether numba's cache was looked at for a notice
        functools.update_wrapper(self, function)

    def __call__(self, *args: Any) -> Any:
        if not (_state.compiled or _state.pending):  # as Python: the common small case
            return self.py_func(*args)
        if not self.compiled():
            return self.py_func(*args)
        dispatcher = self.dispatcher()
        if _state.notice is not None and not self._looked_up:
            self._looked_up = True
            if not _in_cache(dispatcher):
                notice, _state.notice = _state.notice, None
                notice()
        return dispatcher(*args)

    def compiled(self) -> bool:
        """Whether a call now runs compiled; a choice left pending (see `choose`) is made
        on this kernel's presence in numba's cache. Callers with two ways of their own
        (numpy for Python, a kernel compiled) ask before choosing."""
        if _state.pending:
            _state.pending = False
            if _in_cache(self.dispatcher()):
                use_compiled()
        return _state.compiled

    def dispatcher(self) -> Any:
        """numba's dispatcher of the function (see `_compiled_namespace`)."""
        if self._dispatcher is None:
            function = self.py_func
            self._dispatcher = _compiled_namespace(function.__module__)[function.__name__]
        return self._dispatcher


_NAMESPACES: dict[str, dict[str, Any]] = {}


def _compiled_namespace(module: str) -> dict[str, Any]:
    """The globals the kernels of `module` are compiled with: the module's own, with each
    kernel as its numba dispatcher and `prange` as numba's (numba resolves a function's
    globals when it compiles it). Each kernel is compiled from the same code object as
    its Python function, so numba's cache knows it by the same file, name and line."""
    namespace = _NAMESPACES.get(module)
    if namespace is not None:
        return namespace
    import numba

    source = sys.modules[module].__dict__
    namespace = _NAMESPACES[module] = dict(source)
    foreign = []
    for name, value in source.items():
        if name == "prange" and value is range:
            namespace[name] = numba.prange
        elif isinstance(value, Kernel) and value.py_func.__module__ != module:
            foreign.append(name)
        elif isinstance(value, Kernel):
            function = value.py_func
            twin = types.FunctionType(
                function.__code__, namespace, name, function.__defaults__, function.__closure__
            )
            twin.__qualname__ = function.__qualname__
            twin.__module__ = module
            twin.__doc__ = function.__doc__
            namespace[name] = numba.njit(cache=True, parallel=value.parallel)(twin)
    for name in foreign:  # kernels imported from another module: its dispatchers
        namespace[name] = source[name].dispatcher()
    return namespace


def _in_cache(dispatcher: Any) -> bool:
    """Whether numba's cache holds compiled code of `dispatcher` for its current source
    (through numba's cache index; True when that cannot be told)."""
    try:
        return bool(dispatcher._cache._cache_file._load_index())
    except Exception:  # noqa: BLE001 - another numba: no notice rather than a wrong one
        return True


def on_compile(notice: Callable[[], None] | None) -> None:
    """Call `notice` once, before the first kernel numba compiles rather than loads from
    its cache (a new machine, or new code): the run then pauses for seconds to a
    minute."""
    _state.notice = notice


@overload
def kernel(function: F) -> F: ...
@overload
def kernel(*, parallel: bool = False) -> Callable[[F], F]: ...
def kernel(function: Any = None, *, parallel: bool = False) -> Any:
    """Mark a kernel (see the module): `@kernel`, or `@kernel(parallel=True)`."""
    if function is None:
        return lambda f: Kernel(f, parallel)
    return Kernel(function, parallel)


def _mode() -> str:
    if _state.forced:
        return _state.forced
    mode = os.environ.get("PRUDENCE_KERNELS", "auto").strip().lower() or "auto"
    return mode if mode in MODES else "auto"


def choose(work: int) -> None:
    """Decide how the kernels run for `work` units of counting (see the module). Between
    PYTHON_WORK and COMPILE_WORK the decision waits for the first kernel called: it runs
    compiled when numba's cache holds it (so, most likely, the others it goes with)."""
    mode = _mode()
    _state.pending = False
    if mode == "python":
        _state.compiled = False
    elif mode == "compiled" or _state.compiled:
        use_compiled()
    else:
        spent = _state.interpreted + work
        if spent >= COMPILE_WORK:
            use_compiled()
        else:
            _state.pending = spent >= PYTHON_WORK
            _state.interpreted = spent


def use_compiled() -> None:
    """Run every kernel compiled from now on (imports numba)."""
    import numba

    if _state.threads is not None:
        numba.set_num_threads(min(_state.threads, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
    _state.compiled = True


def adopt(compiled: bool) -> None:
    """Run the kernels as the process that planned a task does (a Dask worker runs its
    tasks in a process of its own, which has chosen nothing)."""
    if compiled and not _state.compiled:
        use_compiled()
    elif not compiled and _state.forced is None:
        _state.compiled = False


def is_compiled() -> bool:
    """Whether kernels run compiled now (a pending choice aside: `Kernel.compiled`)."""
    return _state.compiled


def runs_compiled(kernel: Callable[..., Any]) -> bool:
    """Whether `kernel` (a function marked @kernel) runs compiled if called now."""
    return isinstance(kernel, Kernel) and kernel.compiled()


@contextlib.contextmanager
def running(mode: str) -> Iterator[None]:
    """Run the kernels as `mode` ("python" or "compiled") inside the block, whatever the
    work (the tests run both ways)."""
    before = _state.compiled, _state.forced
    if mode == "compiled":
        use_compiled()
    _state.compiled, _state.forced = mode == "compiled", mode
    try:
        yield
    finally:
        _state.compiled, _state.forced = before


def set_threads(threads: int) -> None:
    """Let the parallel kernels use `threads` threads (at most what numba has)."""
    _state.threads = threads
    if _state.compiled:
        import numba

        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]


def threads() -> int:
    """The threads the parallel kernels use when compiled (numba's count, or what it
    would be: NUMBA_NUM_THREADS, else the cores this process may run on)."""
    if _state.compiled:
        import numba

        return int(numba.get_num_threads())
    default = os.environ.get("NUMBA_NUM_THREADS", "")
    most = int(default) if default.isdigit() and int(default) > 0 else _cores()
    return min(_state.threads, most) if _state.threads else most


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
