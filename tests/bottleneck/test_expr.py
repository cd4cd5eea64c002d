"""The formula compiler: golden values, refusal of anything but the whitelisted language."""

from __future__ import annotations

import numpy as np
import pytest

from perfsleuth.bottleneck.kernels.expr import (
    ExpressionError,
    Table,
    compile_node,
    infer_unit,
    names,
    parse,
)
from perfsleuth.bottleneck.kernels.units import parse_unit
from perfsleuth.errors import ConfigError


def run(
    text: str,
    env: dict[str, object] | None = None,
    constants: dict[str, float] | None = None,
    tables: dict[str, Table] | None = None,
) -> object:
    compiled = compile_node(parse(text), constants or {}, tables or {})
    return compiled(env or {}) if callable(compiled) else compiled


# Golden values, worked by hand (or by numpy on the same inputs).
GOLDEN = [
    ("1 + 2 * 3", 7.0),
    ("(1 + 2) * 3", 9.0),
    ("2 ** 10", 1024.0),
    ("-2 ** 2", -4.0),  # Python precedence: -(2**2)
    ("7 / 2", 3.5),
    ("min(3, 1, 2)", 1.0),
    ("max(3, 1, 2)", 3.0),
    ("clip(5, 0, 2)", 2.0),
    ("clip(-5, 0, 2)", 0.0),
    ("where(1 < 2, 10, 20)", 10.0),
    ("10 if 2 < 1 else 20", 20.0),
    ("exp(0) + log(1)", 1.0),
    ("sqrt(16)", 4.0),
    ("abs(-3)", 3.0),
    ("floor(2.7) + ceil(2.2)", 5.0),
    ("logistic(0)", 0.5),
    ("softplus(0)", float(np.log(2.0))),
    ("1 < 2 < 3", 1.0),
    ("1 < 3 < 2", 0.0),
    ("not (1 < 2)", 0.0),
    ("(1 < 2) and (3 > 4)", 0.0),
    ("(1 < 2) or (3 > 4)", 1.0),
]


@pytest.mark.parametrize(("text", "expected"), GOLDEN)
def test_golden_values(text: str, expected: float) -> None:
    assert float(run(text)) == pytest.approx(expected, rel=1e-12)  # type: ignore[arg-type]


def test_vectorised_over_a_batch() -> None:
    x = np.array([1.0, 2.0, 3.0])
    out = run("where(x > 1.5, x * 2, -x) + max(x, 2)", {"x": x})
    np.testing.assert_allclose(out, [-1.0 + 2.0, 4.0 + 2.0, 6.0 + 3.0])


def test_softplus_and_logistic_do_not_overflow() -> None:
    x = np.array([-1000.0, 0.0, 1000.0])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        np.testing.assert_allclose(run("logistic(x)", {"x": x}), [0.0, 0.5, 1.0])
        np.testing.assert_allclose(run("softplus(x)", {"x": x}), [0.0, np.log(2), 1000.0])


def test_constants_are_folded() -> None:
    compiled = compile_node(parse("a * b + 1"), {"a": 2.0, "b": 3.0}, {})
    assert compiled == 7.0
    live = compile_node(parse("a * x + b"), {"a": 2.0, "b": 3.0}, {})
    assert callable(live)
    assert live({"x": 5.0}) == 13.0


def test_table_lookup_is_linear_or_log_and_flat_beyond_the_ends() -> None:
    linear = Table(np.array([0.0, 10.0]), np.array([0.0, 100.0]))
    log = Table(np.array([1.0, 100.0]), np.array([0.0, 2.0]), log_x=True)
    tables = {"t": linear, "g": log}
    x = np.array([-5.0, 5.0, 20.0])
    np.testing.assert_allclose(run("lookup(t, x)", {"x": x}, tables=tables), [0, 50, 100])
    np.testing.assert_allclose(
        run("lookup(g, x)", {"x": np.array([0.5, 10.0, 1000.0])}, tables=tables), [0, 1, 2]
    )


def test_names_separate_values_from_tables() -> None:
    values, tables = names(parse("lookup(t, a + b) * c"))
    assert values == {"a", "b", "c"}
    assert tables == {"t"}


# Everything outside the language is refused, at parse time, before anything can run.
REFUSED = [
    ("x.real", "attribute access"),
    ("().__class__", "attribute access"),
    ("exp.__globals__", "attribute access"),
    ("x[0]", "subscripting"),
    ("__import__('os')", "'__import__'"),
    ("_secret + 1", "'_secret'"),
    ("open('/etc/passwd')", "calling 'open'"),
    ("eval('1+1')", "calling 'eval'"),
    ("exec('x=1')", "calling 'exec'"),
    ("getattr(x, 'y')", "calling 'getattr'"),
    ("(lambda: 1)()", "calling anything but a function name"),
    ("lambda x: x", "lambda"),
    ("[y for y in x]", "comprehension"),
    ("sum(y for y in x)", "calling 'sum'"),
    ("{1: 2}", "dict"),
    ("[1, 2]", "list"),
    ("(1, 2)", "tuple"),
    ("'text'", "constant 'text'"),
    ("b'bytes'", "constant b'bytes'"),
    ("True", "constant True"),
    ("None", "constant None"),
    ("f'{x}'", "f-string"),
    ("(y := 1)", "assignment"),
    ("exp(*x)", "unpacking"),
    ("max(x, y, key=abs)", "keyword argument"),
    ("x // 2", "FloorDiv"),
    ("x % 2", "Mod"),
    ("x @ y", "MatMult"),
    ("x << 1", "LShift"),
    ("~x", "Invert"),
    ("x is y", "comparison Is"),
    ("x in y", "comparison In"),
    ("exp(1, 2)", "2 argument\\(s\\)"),
    ("clip(1)", "1 argument\\(s\\)"),
    ("lookup(1, x)", "lookup\\(\\) of anything but a table name"),
    ("x; import os", "not a formula"),
    ("import os", "not a formula"),
    ("x = 1", "not a formula"),
    ("", "empty formula"),
    ("1 +", "not a formula"),
    # classic escapes from "safe" eval sandboxes, and other ways to run code
    ("x.__class__.__bases__[0].__subclasses__()", "attribute access"),
    ("exp(1).__class__", "attribute access"),
    ("__builtins__", "'__builtins__'"),
    ("breakpoint()", "calling 'breakpoint'"),
    ("globals()", "calling 'globals'"),
    ("compile('1', 'f', 'eval')", "calling 'compile'"),
    ("a if b else __import__('os')", "'__import__'"),
    ("lookup(t.x, 1)", "attribute access"),
    ("exp(x)(1)", "calling anything but a function name"),
    ("await x", "await"),
    ("(yield x)", "yield"),
    ("{1}", "set"),
    ("[*x]", "list"),
    ("x[1:2]", "subscripting"),
    ("...", "constant Ellipsis"),
    ("1j", "constant 1j"),
    ("max()", "0 argument\\(s\\)"),
]


@pytest.mark.parametrize(("text", "message"), REFUSED)
def test_refuses_everything_outside_the_language(text: str, message: str) -> None:
    with pytest.raises(ExpressionError, match=message) as info:
        parse(text)
    assert isinstance(info.value, ConfigError)  # a PerfsleuthError the CLI reports cleanly


def test_refusal_says_where() -> None:
    with pytest.raises(ExpressionError, match="at column 5"):
        parse("1 + x.y")


def test_refuses_overlong_and_deep_formulas() -> None:
    with pytest.raises(ExpressionError, match="longer than"):
        parse("1 + " * 2000 + "1")
    with pytest.raises(ExpressionError, match="nest"):
        parse("(" * 100 + "1" + ")" * 100 + " + " + "exp(" * 70 + "1" + ")" * 70)


def test_refuses_non_text() -> None:
    with pytest.raises(ExpressionError, match="must be text"):
        parse(42)  # type: ignore[arg-type]


def test_no_python_evaluation_happens(tmp_path: object) -> None:
    # a formula naming a Python builtin is just an unknown value name, never a call into Python
    values, _ = names(parse("open + print"))
    assert values == {"open", "print"}


def test_the_compiler_never_calls_eval_exec_or_compile() -> None:
    import ast
    import inspect

    from perfsleuth.bottleneck.kernels import expr

    called = {
        node.func.id
        for node in ast.walk(ast.parse(inspect.getsource(expr)))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert not called & {"eval", "exec", "compile", "__import__"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("9 ** 9 ** 9", np.inf),  # floats throughout: no giant integer to compute
        ("10 ** 400", np.inf),
        ("1 / 0", np.inf),
        ("log(0)", -np.inf),
        ("sqrt(-1)", np.nan),
    ],
)
def test_overflow_and_domain_errors_give_ieee_values(text: str, expected: float) -> None:
    with np.errstate(all="ignore"):
        out = float(run(text))  # type: ignore[arg-type]
    np.testing.assert_equal(out, expected)


# Units
U = parse_unit


def unit_of(text: str, **units: str) -> object:
    return infer_unit(parse(text), {k: U(v) for k, v in units.items()}, {})


def test_units_multiply_divide_and_add() -> None:
    assert unit_of("rate * size", rate="op/s", size="B/op").same(U("B/s"))  # type: ignore[union-attr]
    assert unit_of("bw / size", bw="B/s", size="B/op").same(U("op/s"))  # type: ignore[union-attr]
    assert unit_of("a + 1", a="B").same(U("B"))  # type: ignore[union-attr]
    assert unit_of("sqrt(a)", a="B^2").same(U("B"))  # type: ignore[union-attr]
    assert unit_of("a ** 2", a="s").same(U("s^2"))  # type: ignore[union-attr]
    assert unit_of("a ** -1", a="s").same(U("Hz"))  # type: ignore[union-attr]
    assert unit_of("2") is None


@pytest.mark.parametrize(
    ("text", "units", "message"),
    [
        ("a + b", {"a": "B", "b": "s"}, "units of '\\+' differ: B and s"),
        ("a + b", {"a": "B", "b": "KiB"}, "differ"),
        ("exp(a)", {"a": "B"}, "exp\\(\\) needs a dimensionless argument"),
        ("min(a, b)", {"a": "B", "b": "op"}, "arguments of min"),
        ("where(a, 1, 2)", {"a": "B"}, "condition"),
        ("a ** b", {"a": "B", "b": "1"}, "literal exponent"),
        ("2 ** a", {"a": "B"}, "exponent must be dimensionless"),
        ("a if a > b else a", {"a": "B", "b": "s"}, "differ"),
    ],
)
def test_unit_mismatches_are_refused(text: str, units: dict[str, str], message: str) -> None:
    with pytest.raises(ExpressionError, match=message):
        unit_of(text, **units)


def test_table_lookup_checks_the_index_unit() -> None:
    table = Table(np.array([1.0, 2.0]), np.array([1.0, 2.0]), U("B"), U("s"))
    node = parse("lookup(t, a)")
    assert infer_unit(node, {"a": U("B")}, {"t": table}).same(U("s"))  # type: ignore[union-attr]
    with pytest.raises(ExpressionError, match="indexed in B"):
        infer_unit(node, {"a": U("s")}, {"t": table})
