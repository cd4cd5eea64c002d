"""The Gaussian error model: defaults, learning with shrinkage, files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perfsleuth.bottleneck.kernels.errormodel import ErrorModel, learn_error_model
from perfsleuth.bottleneck.kernels.model import load_model
from perfsleuth.errors import ConfigError, DataError

MODEL = load_model()


def cases(n: int, seed: int = 0, bias: float = 0.3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Predicted and observed counters whose errors on the asinh scale have a known mean and
    covariance (two correlated counters)."""
    base = ErrorModel.default(MODEL)
    rng = np.random.default_rng(seed)
    w = MODEL.priors.sample_w(rng, n)
    predicted, _ = MODEL.predict(w)
    k = len(base.columns)
    mean = np.zeros(k)
    mean[0] = bias
    cov = np.diag(np.full(k, 0.05**2))
    cov[0, 1] = cov[1, 0] = 0.8 * 0.05**2
    eps = rng.multivariate_normal(mean, cov, size=n)
    observed = base.scale * np.sinh(base.transform(predicted) + eps)
    return predicted, observed, cov


def test_default_is_diagonal_from_the_model() -> None:
    errors = ErrorModel.default(MODEL)
    assert errors.columns == MODEL.counter_columns
    np.testing.assert_allclose(errors.sd, [c.sd for c in MODEL.counters])
    assert np.count_nonzero(errors.cov - np.diag(np.diag(errors.cov))) == 0


def test_few_cases_stay_near_the_default_many_approach_the_truth() -> None:
    default = ErrorModel.default(MODEL)
    pred, obs, cov = cases(3)
    few = learn_error_model(MODEL, pred, obs)
    # a counter whose default sd (0.1) is near the truth's scale: 5 pseudo-cases of a wide prior
    # (the run queue's sd 0.6) would still pull 3,000 cases' variance up by a quarter
    d = MODEL.counter_columns.index("disk.reads")
    # with 3 cases against 5 pseudo-cases, variances move less than half way
    assert abs(few.cov[d, d] - default.cov[d, d]) < 0.5 * abs(cov[d, d] - default.cov[d, d])
    pred, obs, cov = cases(3000)
    many = learn_error_model(MODEL, pred, obs)
    assert many.mean[0] == pytest.approx(0.3, abs=0.01)
    assert many.cov[d, d] == pytest.approx(cov[d, d], rel=0.1)
    corr = many.cov[0, 1] / np.sqrt(many.cov[0, 0] * many.cov[1, 1])
    assert corr == pytest.approx(0.8, abs=0.05)
    assert np.linalg.eigvalsh(many.cov).min() > 0
    assert many.cases == 3000


def test_missing_counters_are_skipped_pairwise() -> None:
    pred, obs, _ = cases(200)
    obs[:, 5] = np.nan
    obs[:100, 6] = np.nan
    learned = learn_error_model(MODEL, pred, obs)
    default = ErrorModel.default(MODEL)
    assert learned.cov[5, 5] == pytest.approx(default.cov[5, 5])  # never observed: default
    assert np.isfinite(learned.cov).all()


def test_bad_input_is_refused() -> None:
    pred, obs, _ = cases(5)
    with pytest.raises(DataError, match="expected cases"):
        learn_error_model(MODEL, pred[:, :3], obs[:, :3])
    obs[0, 0] = np.inf
    with pytest.raises(DataError, match="finite or NaN"):
        learn_error_model(MODEL, pred, obs)


def test_file_round_trip(tmp_path: Path) -> None:
    pred, obs, _ = cases(300)
    learned = learn_error_model(MODEL, pred, obs, source="test")
    path = learned.save(tmp_path / "errors.toml")
    again = ErrorModel.load(path, MODEL)
    np.testing.assert_allclose(again.cov, learned.cov)
    np.testing.assert_allclose(again.mean, learned.mean)
    assert again.cases == 300


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[error_model]\ncases = 1\n", "error_model.columns: missing"),
        (
            '[error_model]\ncolumns = ["cpu.user"]\nscale = [0.02]\nmean = [0.0]\ncov = [[-1.0]]\n',
            "not symmetric positive definite",
        ),
        (
            '[error_model]\ncolumns = ["nope"]\nscale = [1.0]\nmean = [0.0]\ncov = [[1.0]]\n',
            "'nope' is not a counter",
        ),
        (
            '[error_model]\ncolumns = ["cpu.user"]\nscale = [5.0]\nmean = [0.0]\ncov = [[1.0]]\n',
            "differs from model",
        ),
        (
            '[error_model]\ncolumns = ["cpu.user"]\nscale = [0.02]\nmean = [0.0, 1.0]\n'
            "cov = [[1.0]]\n",
            "error_model.mean: expected",
        ),
        ("[error_model]\nextra = 1\n", "error_model.extra: unknown key"),
        ("[nothing]\n", "no \\[error_model\\] table"),
        ("error_model = [", "not valid TOML"),
    ],
)
def test_bad_files_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "errors.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        ErrorModel.load(path, MODEL)
