"""Fuzzing every config and model loader through the command line: success, or exit 2 with one
error message (one line per problem, each naming the file) — never a traceback.

Each file starts from a real one — ``examples/perfsleuth.toml``, the built-in process rules,
the built-in Linux bottleneck model, its calibration and error model, the example upgrade
catalogue, a web-log rules file — and is bent two ways: values replaced, removed or added in the
parsed TOML (huge or negative numbers, NaN, durations like ``"99999999999w"``, wrong types), or
bytes edited in the text (invalid UTF-8, NUL, cut lines, deep nesting).
"""

from __future__ import annotations

import tempfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.support import FUZZ, Outcome, mutated, run_cli, toml_mutation

# each test loads seven kinds of file through the CLI: over 10 s on a busy machine
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _profile_seed() -> str:
    """A calibration profile of the built-in model's own constants and tables."""
    from perfsleuth.bottleneck.kernels.calibration import Profile
    from perfsleuth.bottleneck.kernels.model import load_model

    model = load_model()
    tables = {name: (list(t.x), list(t.y)) for name, t in model.tables.items()}
    return Profile(model.name, dict(model.constants), tables).to_toml()


def _error_model_seed() -> str:
    from perfsleuth.bottleneck.kernels.errormodel import ErrorModel
    from perfsleuth.bottleneck.kernels.model import load_model

    return ErrorModel.default(load_model()).to_toml()


def _rules_seed() -> str:
    from perfsleuth.processes.rules import default_rules_text

    return default_rules_text()


SEEDS = {
    "config": (ROOT / "examples" / "perfsleuth.toml").read_text,
    "process rules": _rules_seed,
    "model": (ROOT / "src/perfsleuth/bottleneck/models/linux.toml").read_text,
    "calibration": _profile_seed,
    "error model": _error_model_seed,
    "upgrades": (ROOT / "src/perfsleuth/bottleneck/examples/upgrades.toml").read_text,
    "web-log rules": lambda: (
        '[[rule]]\ntype = "search"\nmethod = "GET"\npath = "/search*"\n\n'
        '[[rule]]\ntype = "cart"\nregex = "^/cart/[0-9]+$"\n'
    ),
}

DEEP = ["a = " + "[" * 5000 + "]" * 5000, "a = " + "{b = " * 3000 + "1" + "}" * 3000]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Small valid data for the commands that load the files: counters, processes, a log."""
    folder = tmp_path_factory.mktemp("fuzz-inputs")
    counters = folder / "counters.parquet"
    made = run_cli(["bottleneck", "simulate", "rand_read", "-o", str(counters), "--samples", "6"])
    assert made.code == 0, made.err
    processes = folder / "processes.csv"
    processes.write_text(
        "time,node,pid,name,user,cpu,rss_bytes,ncpu,os\n"
        + "".join(
            f"{1_700_000_000 + 3600 * i},n1,7,spin,root,0.99,1000,2,Linux\n" for i in range(6)
        )
    )
    log = folder / "access.log"
    log.write_text(
        '192.0.2.1 - - [10/Oct/2000:13:55:36 +0000] "GET /search?q=x HTTP/1.1" 200 5 "-" "a" 150\n'
    )
    return {"counters": counters, "processes": processes, "log": log}


def _command(kind: str, path: Path, inputs: dict[str, Path]) -> list[str]:
    infer = ["bottleneck", "infer", str(inputs["counters"])]
    return {
        "config": ["config", "check", str(path)],
        "process rules": ["processes", "scan", str(inputs["processes"]), "--rules", str(path)],
        "model": ["bottleneck", "check", str(path)],
        "calibration": [*infer, "--calibration", str(path)],
        "error model": [*infer, "--error-model", str(path)],
        "upgrades": [*infer, "--upgrades", str(path), "--target", "2x"],
        "web-log rules": [
            "workload", str(inputs["log"]), "--source", "weblog", "--rules", str(path),
        ],
    }[kind]  # fmt: skip


def _check(outcome: Outcome, path: Path) -> None:
    """One message; when it spans lines (one per problem of a config), each names the file."""
    outcome.check()
    if outcome.code == 2:
        message = outcome.err[outcome.err.index("perfsleuth: error: ") :].strip().splitlines()
        located = [line for line in message if path.name in line]
        assert located or len(message) == 1, outcome.err


def _dumped(data: dict[str, Any]) -> bytes | None:
    try:
        return tomli_w.dumps(data).encode()
    except (TypeError, ValueError):
        return None  # not expressible in TOML (e.g. an empty key path): no file to load


@given(kind=st.sampled_from(sorted(SEEDS)), data=st.data())
@FUZZ
def test_values_replaced(kind: str, data: st.DataObject, inputs: dict[str, Path]) -> None:
    seed = tomllib.loads(SEEDS[kind]())
    content = _dumped(data.draw(toml_mutation(seed)))
    if content is None:
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzzed.toml"
        path.write_bytes(content)
        _check(run_cli(_command(kind, path, inputs)), path)


@given(
    kind=st.sampled_from(sorted(SEEDS)),
    data=st.data(),
    deep=st.sampled_from([None, *DEEP]),
)
@FUZZ
def test_bytes_edited(
    kind: str, data: st.DataObject, deep: str | None, inputs: dict[str, Path]
) -> None:
    text = SEEDS[kind]().encode()
    content = data.draw(mutated(text)) if deep is None else (deep + "\n").encode()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzzed.toml"
        path.write_bytes(content)
        _check(run_cli(_command(kind, path, inputs)), path)
