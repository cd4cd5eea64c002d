"""A safe compiler for model formulas: text → vectorised numpy, never ``eval``.

A formula such as ``"rate * clip(size / page_size, 1, 64) + lookup(disk_a, depth)"`` is parsed
with :func:`ast.parse` (parsing runs no code) and every node is checked against a whitelist
before anything else happens: numbers, names, ``+ - * / **``, unary ``- +``, comparisons,
``and``/``or``/``not``, ``a if c else b`` and calls of the functions in :data:`FUNCTIONS` by bare
name. Attribute access, subscripts, strings, lambdas, comprehensions, keyword arguments,
``*args``, walrus, f-strings and names starting with ``_`` are refused with a message that says
where. The checked tree becomes a small IR of our own (:class:`Node`), which is then

* asked for the names it reads (:func:`names`, for ordering and cycle checks),
* given units (:func:`infer_unit`, for the model's unit check), and
* compiled (:func:`compile_node`) into nested closures over an environment of numpy arrays,
  with every sub-expression that reads only constants folded to a number once.

Evaluation is elementwise: the environment holds one array per name (a batch of workloads), so
one call evaluates many workloads at once (the inference evaluates its Jacobian in one call).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from perfsleuth.bottleneck.kernels.units import DIMENSIONLESS, Unit
from perfsleuth.errors import ConfigError

__all__ = [
    "FUNCTIONS",
    "Compiled",
    "ExpressionError",
    "Node",
    "Table",
    "compile_node",
    "infer_unit",
    "names",
    "parse",
]

Array: TypeAlias = npt.NDArray[np.float64]
Value: TypeAlias = "float | Array"
Env: TypeAlias = Mapping[str, Any]
Compiled: TypeAlias = "float | Callable[[Env], Any]"
"""A compiled expression: a folded constant, or a function of the environment."""

MAX_LENGTH = 4000  # characters: a formula is a line or two, not a program
MAX_DEPTH = 60  # nesting of the IR; deeper is refused before Python's recursion limit


class ExpressionError(ConfigError):
    """A formula is not in the whitelisted language, or its names or units do not fit."""


# ---------------------------------------------------------------------------------------------
# The IR
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Node:
    """One IR node: ``kind`` is num, var, neg, pos, not, bin, cmp, and, or, if, call."""

    kind: str
    op: str = ""
    value: float = 0.0
    name: str = ""
    args: tuple[Node, ...] = ()
    col: int = 0  # 0-based column in the formula text, for messages


@dataclass(frozen=True, slots=True)
class Table:
    """A 1-D lookup table: piecewise-linear in x (or in log x), flat beyond both ends."""

    x: npt.NDArray[np.float64]
    y: npt.NDArray[np.float64]
    x_unit: Unit = DIMENSIONLESS
    y_unit: Unit = DIMENSIONLESS
    log_x: bool = False

    def __call__(self, x: Any) -> Any:
        points = self.x
        at = x
        if self.log_x:
            points = np.log(self.x)
            with np.errstate(divide="ignore", invalid="ignore"):
                at = np.log(np.maximum(x, self.x[0]))
        return np.interp(at, points, self.y)


# name -> (min args, max args or None, implementation); lookup's first argument is a table.
FUNCTIONS: dict[str, tuple[int, int | None, Callable[..., Any]]] = {
    "exp": (1, 1, np.exp),
    "log": (1, 1, np.log),
    "log2": (1, 1, np.log2),
    "log10": (1, 1, np.log10),
    "sqrt": (1, 1, np.sqrt),
    "abs": (1, 1, np.abs),
    "floor": (1, 1, np.floor),
    "ceil": (1, 1, np.ceil),
    "logistic": (1, 1, lambda x: 0.5 * (1.0 + np.tanh(0.5 * x))),  # 1/(1+e^-x), no overflow
    "softplus": (1, 1, lambda x: np.logaddexp(0.0, x)),  # log(1 + e^x), no overflow
    "min": (2, None, lambda *a: _reduce(np.minimum, a)),
    "max": (2, None, lambda *a: _reduce(np.maximum, a)),
    "clip": (3, 3, lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi)),
    "where": (3, 3, np.where),
    "lookup": (2, 2, lambda table, x: table(x)),
}
_DIMENSIONLESS_IN = {"exp", "log", "log2", "log10", "logistic", "softplus"}
_SAME_UNIT = {"min", "max", "clip", "abs", "floor", "ceil"}

_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_UNARY = {ast.USub: "neg", ast.UAdd: "pos", ast.Not: "not"}
_BINARY_IMPL: dict[str, Callable[[Any, Any], Any]] = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "/": np.divide,
    "**": np.power,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
    "==": np.equal,
    "!=": np.not_equal,
}


def _reduce(op: Callable[[Any, Any], Any], args: tuple[Any, ...]) -> Any:
    result = args[0]
    for arg in args[1:]:
        result = op(result, arg)
    return result


# ---------------------------------------------------------------------------------------------
# Parsing: Python's parser, then a whitelist walk into the IR
# ---------------------------------------------------------------------------------------------


def parse(text: str) -> Node:
    """Parse and check ``text``; raises :class:`ExpressionError` saying what is not allowed."""
    if not isinstance(text, str):
        raise ExpressionError(f"a formula must be text, got {type(text).__name__}")
    if not text.strip():
        raise ExpressionError("empty formula")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"formula longer than {MAX_LENGTH} characters")
    source = " ".join(text.split())  # TOML multi-line strings: newlines are just spaces here
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        where = f" at column {exc.offset}" if exc.offset else ""
        raise ExpressionError(f"not a formula{where}: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise ExpressionError(f"formula too deeply nested or malformed: {exc}") from None
    return _convert(tree.body, 0)


def _refuse(node: ast.AST, what: str) -> ExpressionError:
    col = getattr(node, "col_offset", None)
    where = f" at column {col + 1}" if col is not None else ""
    return ExpressionError(f"{what} is not allowed in a formula{where}")


_DESCRIBE: dict[type[ast.AST], str] = {
    ast.Attribute: "attribute access ('.')",
    ast.Subscript: "subscripting ('[...]')",
    ast.Lambda: "lambda",
    ast.ListComp: "a comprehension",
    ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension",
    ast.GeneratorExp: "a generator expression",
    ast.NamedExpr: "assignment (':=')",
    ast.JoinedStr: "an f-string",
    ast.Starred: "unpacking ('*')",
    ast.List: "a list",
    ast.Tuple: "a tuple",
    ast.Dict: "a dict",
    ast.Set: "a set",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.Slice: "a slice",
}


def _convert(node: ast.AST, depth: int) -> Node:
    if depth > MAX_DEPTH:
        raise _refuse(node, f"nesting deeper than {MAX_DEPTH}")
    col = getattr(node, "col_offset", 0)
    down = depth + 1
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _refuse(node, f"the constant {value!r} (only numbers)")
        return Node("num", value=float(value), col=col)
    if isinstance(node, ast.Name):
        if node.id.startswith("_"):
            raise _refuse(node, f"the name {node.id!r} (names may not start with '_')")
        return Node("var", name=node.id, col=col)
    if isinstance(node, ast.BinOp):
        op = _BIN.get(type(node.op))
        if op is None:
            raise _refuse(node, f"the operator {type(node.op).__name__}")
        return Node(
            "bin", op=op, args=(_convert(node.left, down), _convert(node.right, down)), col=col
        )
    if isinstance(node, ast.UnaryOp):
        kind = _UNARY.get(type(node.op))
        if kind is None:
            raise _refuse(node, f"the operator {type(node.op).__name__}")
        return Node(kind, args=(_convert(node.operand, down),), col=col)
    if isinstance(node, ast.Compare):
        parts = []
        left = _convert(node.left, down)
        for op_node, right_node in zip(node.ops, node.comparators, strict=True):
            op = _CMP.get(type(op_node))
            if op is None:
                raise _refuse(node, f"the comparison {type(op_node).__name__}")
            right = _convert(right_node, down)
            parts.append(Node("cmp", op=op, args=(left, right), col=col))
            left = right
        return parts[0] if len(parts) == 1 else Node("and", args=tuple(parts), col=col)
    if isinstance(node, ast.BoolOp):
        kind = "and" if isinstance(node.op, ast.And) else "or"
        return Node(kind, args=tuple(_convert(v, down) for v in node.values), col=col)
    if isinstance(node, ast.IfExp):
        args = (_convert(node.test, down), _convert(node.body, down), _convert(node.orelse, down))
        return Node("if", args=args, col=col)
    if isinstance(node, ast.Call):
        return _call(node, down)
    what = _DESCRIBE.get(type(node), f"{type(node).__name__}")
    raise _refuse(node, what)


def _call(node: ast.Call, depth: int) -> Node:
    if not isinstance(node.func, ast.Name):
        if isinstance(node.func, ast.Attribute):
            raise _refuse(node.func, "attribute access ('.')")
        raise _refuse(node, "calling anything but a function name")
    name = node.func.id
    if name not in FUNCTIONS:
        known = ", ".join(sorted(FUNCTIONS))
        raise _refuse(node, f"calling {name!r} (functions: {known})")
    if node.keywords:
        raise _refuse(node, "a keyword argument")
    low, high, _ = FUNCTIONS[name]
    count = len(node.args)
    if count < low or (high is not None and count > high):
        expected = (
            str(low) if low == high else f"{low} or more" if high is None else f"{low}-{high}"
        )
        raise _refuse(node, f"{name}() with {count} argument(s); it takes {expected}")
    args = tuple(_convert(a, depth) for a in node.args)
    if name == "lookup" and args[0].kind != "var":
        raise _refuse(node, "lookup() of anything but a table name as first argument")
    return Node("call", name=name, args=args, col=node.col_offset)


# ---------------------------------------------------------------------------------------------
# Analysis: names read, units
# ---------------------------------------------------------------------------------------------


def names(node: Node) -> tuple[set[str], set[str]]:
    """(value names, table names) the expression reads."""
    values: set[str] = set()
    tables: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if item.kind == "var":
            values.add(item.name)
        elif item.kind == "call" and item.name == "lookup":
            tables.add(item.args[0].name)
            stack.append(item.args[1])
            continue
        stack.extend(item.args)
    return values, tables


def infer_unit(node: Node, units: Mapping[str, Unit], tables: Mapping[str, Table]) -> Unit | None:
    """The unit of ``node``, or None for a bare number (which fits any unit in ``+ - min``...).

    Raises :class:`ExpressionError` when units do not fit: adding bytes to seconds, ``exp`` of
    a quantity with dimensions, a table looked up with the wrong unit.
    """
    kind = node.kind
    if kind == "num":
        return None
    if kind == "var":
        return units[node.name]
    if kind in ("neg", "pos"):
        return infer_unit(node.args[0], units, tables)
    if kind == "not":
        _boolean(node.args[0], units, tables)
        return DIMENSIONLESS
    if kind in ("and", "or"):
        for arg in node.args:
            _boolean(arg, units, tables)
        return DIMENSIONLESS
    if kind == "cmp":
        _common(node, [infer_unit(a, units, tables) for a in node.args], f"'{node.op}'")
        return DIMENSIONLESS
    if kind == "if":
        _boolean(node.args[0], units, tables)
        parts = [infer_unit(a, units, tables) for a in node.args[1:]]
        return _common(node, parts, "the two branches of 'if'")
    if kind == "bin":
        return _binary(node, units, tables)
    return _function(node, units, tables)


def _boolean(node: Node, units: Mapping[str, Unit], tables: Mapping[str, Table]) -> None:
    unit = infer_unit(node, units, tables)
    if unit is not None and not unit.dimensionless:
        raise ExpressionError(
            f"column {node.col + 1}: a condition must be a comparison, got {unit}"
        )


def _common(node: Node, parts: list[Unit | None], what: str) -> Unit | None:
    known = [u for u in parts if u is not None]
    for unit in known[1:]:
        if not unit.same(known[0]):
            raise ExpressionError(
                f"column {node.col + 1}: units of {what} differ: {known[0]} and {unit}"
            )
    return known[0] if known else None


def _binary(node: Node, units: Mapping[str, Unit], tables: Mapping[str, Table]) -> Unit | None:
    left, right = (infer_unit(a, units, tables) for a in node.args)
    op = node.op
    if op in ("+", "-"):
        return _common(node, [left, right], f"'{op}'")
    if op == "*":
        if left is None or right is None:
            return left if right is None else right
        return left * right
    if op == "/":
        if right is None:
            return left
        return (DIMENSIONLESS if left is None else left) / right
    # '**': a quantity with dimensions may only be raised to a literal number
    if right is not None and not right.dimensionless:
        raise ExpressionError(
            f"column {node.col + 1}: an exponent must be dimensionless, got {right}"
        )
    if left is None or left.dimensionless:
        return left
    exponent = node.args[1]
    sign = 1.0
    if exponent.kind == "neg" and exponent.args[0].kind == "num":
        sign, exponent = -1.0, exponent.args[0]
    if exponent.kind != "num":
        raise ExpressionError(
            f"column {node.col + 1}: {left} raised to a computed power has no unit; "
            "use a literal exponent"
        )
    return left ** Fraction(sign * exponent.value).limit_denominator(64)


def _function(node: Node, units: Mapping[str, Unit], tables: Mapping[str, Table]) -> Unit | None:
    name = node.name
    if name == "lookup":
        table = tables[node.args[0].name]
        at = infer_unit(node.args[1], units, tables)
        if at is not None and not at.same(table.x_unit):
            raise ExpressionError(
                f"column {node.col + 1}: table {node.args[0].name!r} is indexed in "
                f"{table.x_unit}, looked up with {at}"
            )
        return table.y_unit
    parts = [infer_unit(a, units, tables) for a in node.args]
    if name in _DIMENSIONLESS_IN:
        if parts[0] is not None and not parts[0].dimensionless:
            raise ExpressionError(
                f"column {node.col + 1}: {name}() needs a dimensionless argument, got {parts[0]}"
            )
        return DIMENSIONLESS
    if name == "sqrt":
        return None if parts[0] is None else parts[0] ** Fraction(1, 2)
    if name == "where":
        _boolean(node.args[0], units, tables)
        return _common(node, parts[1:], "the branches of where()")
    if name in _SAME_UNIT:
        return _common(node, parts, f"the arguments of {name}()")
    raise ExpressionError(f"no unit rule for {name}()")  # pragma: no cover - FUNCTIONS is closed


# ---------------------------------------------------------------------------------------------
# Compilation to closures, folding constants
# ---------------------------------------------------------------------------------------------


def compile_node(
    node: Node, constants: Mapping[str, float], tables: Mapping[str, Table]
) -> Compiled:
    """Compile ``node`` to a number (when it reads only ``constants``) or a closure ``f(env)``.

    ``env`` maps every other name to a float or an array; results broadcast like numpy.
    Floating-point warnings (overflow, division by zero) are the caller's to silence or raise.
    """
    kind = node.kind
    if kind == "num":
        return node.value
    if kind == "var":
        if node.name in constants:
            return float(constants[node.name])
        key = node.name
        return lambda env: env[key]
    if kind == "call":
        name = node.name
        impl = FUNCTIONS[name][2]
        if name == "lookup":
            table = tables[node.args[0].name]
            return _apply(table, [compile_node(node.args[1], constants, tables)])
        return _apply(impl, [compile_node(a, constants, tables) for a in node.args])
    args = [compile_node(a, constants, tables) for a in node.args]
    if kind == "neg":
        return _apply(np.negative, args)
    if kind == "pos":
        return args[0]
    if kind == "not":
        return _apply(np.logical_not, args)
    if kind == "and":
        return _apply(lambda *a: _reduce(np.logical_and, a), args)
    if kind == "or":
        return _apply(lambda *a: _reduce(np.logical_or, a), args)
    if kind == "if":
        test, body, orelse = args
        return _apply(np.where, [test, body, orelse])
    if node.op == "**" and not callable(args[1]) and float(args[1]) in _POWERS:
        # the model's smooth caps (x ** 4, y ** 0.25): squares and square roots, a fraction
        # of np.power's cost, equal to it within rounding
        return _apply(_POWERS[float(args[1])], args[:1])
    return _apply(_BINARY_IMPL[node.op], args)


def _fourth(x: Any) -> Any:
    return np.square(np.square(x))


def _fourth_root(x: Any) -> Any:
    return np.sqrt(np.sqrt(x))


_POWERS: dict[float, Callable[[Any], Any]] = {
    2.0: np.square,
    4.0: _fourth,
    0.5: np.sqrt,
    0.25: _fourth_root,
}


def _apply(impl: Callable[..., Any], args: list[Compiled]) -> Compiled:
    if not any(callable(a) for a in args):
        with np.errstate(all="ignore"):
            folded = impl(*args)
        return float(folded) if np.ndim(folded) == 0 else folded
    if len(args) == 1:
        (only,) = args
        assert callable(only)
        return lambda env: impl(only(env))
    if len(args) == 2:
        a, b = args
        if callable(a) and callable(b):
            return lambda env: impl(a(env), b(env))
        if callable(a):
            return lambda env: impl(a(env), b)
        assert callable(b)
        return lambda env: impl(a, b(env))
    parts = [(a, callable(a)) for a in args]
    return lambda env: impl(*[a(env) if live else a for a, live in parts])  # type: ignore[operator]
