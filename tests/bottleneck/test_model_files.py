"""Issue 16 in the bottleneck files: any number in a model, error-model or catalogue file, out
of range or degenerate, loads or is a ConfigError — never an OverflowError, ZeroDivisionError
or RecursionError traceback."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from perfsleuth.bottleneck.kernels.errormodel import ErrorModel
from perfsleuth.bottleneck.kernels.model import load_model
from perfsleuth.bottleneck.kernels.upgrades import load_catalogue
from perfsleuth.errors import ConfigError

pytestmark = pytest.mark.slow

BOTTLENECK = Path(__file__).parents[2] / "src" / "perfsleuth" / "bottleneck"
MODEL = load_model()
NUMBER = re.compile(r'^(\s*[A-Za-z_."]+\s*=\s*)(-?[0-9][0-9_.eE+-]*)\s*$')
EXTREMES = ("1e400", "0", "-1e308", "1e-320", "nan")

LOADERS: dict[str, tuple[Callable[[], str], Callable[[Path], object]]] = {
    "model": (
        (BOTTLENECK / "models" / "linux.toml").read_text,
        load_model,
    ),
    "catalogue": (
        (BOTTLENECK / "examples" / "upgrades.toml").read_text,
        lambda path: load_catalogue(path, MODEL),
    ),
    "error model": (
        lambda: ErrorModel.default(MODEL).to_toml(),
        lambda path: ErrorModel.load(path, MODEL),
    ),
}


@pytest.mark.parametrize("kind", list(LOADERS))
def test_every_number_replaced_by_an_extreme_loads_or_is_a_config_error(
    kind: str, tmp_path: Path
) -> None:
    text, load = LOADERS[kind]
    lines = text().splitlines()
    path = tmp_path / "mutated.toml"
    mutations = 0
    for i, line in enumerate(lines):
        match = NUMBER.match(line)
        if match is None:
            continue
        for extreme in EXTREMES:
            path.write_text("\n".join([*lines[:i], match[1] + extreme, *lines[i + 1 :]]))
            mutations += 1
            try:
                load(path)
            except ConfigError as exc:
                assert "mutated.toml" in str(exc)
    assert mutations >= len(EXTREMES)
