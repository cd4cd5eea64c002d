"""Short public series with change points documented outside any benchmark (the ``short`` group
of ``benchmarks/changepoints_accuracy.py``).

Every series is read at run time from a snapshot of its public repository (a bare git directory
under ``--mirror``, as ``fetch`` leaves it: ``<owner>+<name>/repo``); nothing of them is copied
into this repository. Each annotation comes from the package's own documentation or data (an
indicator column), a paper that dated the change, or a dated real event; none comes from a
change-point benchmark's annotators. Indices are the first observation of the new segment.

=================================  ====  ===========================  ===========================
series                             n     source (licence)             annotation and reference
=================================  ====  ===========================  ===========================
nile                               100   R datasets ``Nile``          1899: Aswan dam works (Cobb
                                         (wch/r-source, GPL-2)        1978; Zeileis et al. 2003)
seatbelts_drivers                  192   R datasets ``Seatbelts``     the ``law`` column: front
seatbelts_front                          (GPL-2)                      seat belts compulsory from
seatbelts_van_drivers                                                 31 Jan 1983 (Harvey & Durbin
                                                                      1986)
beaver2_temperature                100   MASS ``beav2``               the ``activ`` column
                                         (cran/MASS, GPL-2/3)         (Reynolds 1994)
coal_disasters                     112   boot ``coal``, yearly counts 1891: Jarrett 1979; Raftery
                                         (cran/boot, GPL-2)           & Akman 1986
us_airmiles                        113   TSA ``airmiles``             Sept 2001 (11 September;
                                         (cran/TSA, GPL-2/3)          Cryer & Chan 2008, ch. 11)
campylobacter_quebec               140   tscount ``campy``            t = 84: level shift
                                         (cran/tscount, GPL-2/3)      (Fokianos & Fried 2010)
ehec_nrw                           646   tscount ``ehec``             2011 weeks 20 and 27: the
                                                                      O104:H4 outbreak (Frank et
                                                                      al. 2011)
us_gnp_real, us_gnp_nominal,       62–   urca ``nporg`` (Nelson &     1930: the Great Crash
us_industrial_production,          111   Plosser), cran/urca, GPL-2+  (Perron 1989)
us_employment, us_wages_nominal,
us_money_stock
global_temperature                 174   astsa ``gtemp_both`` (NOAA), 1912, 1940, 1970 (Cahill,
                                         cran/astsa, GPL-3            Rahmstorf & Parnell 2015)
us_real_interest_rate              103   strucchange ``RealInt``      1967 Q1, 1972 Q4, 1980 Q3
                                         (cran/strucchange, GPL-2/3)  (Bai & Perron 2003, Table 1)
outbreak_measles_leer, …_aachen,   209   surveillance ``m3``, ``m4``, the ``state`` column: the
outbreak_norovirus_berlin,               ``n1``, ``s1``, ``s3``       outbreaks the RKI defined
outbreak_salmonella_oranienburg,         (cran/surveillance, GPL-2)   (those of ≥ 5 weeks in a
outbreak_salmonella_anatum                                            series averaging ≥ 1 case)
salmonella_newport                 522   surveillance ``salmNewport`` Oct–Nov 2011: the mung
                                         (all states summed)          bean sprout outbreak (Bayer
                                                                      et al. 2014)
stock_delta_air_lines,             103   strucchange ``SP2001``       17 Sept 2001: trading
stock_southwest_airlines                 (daily closes, Yahoo!        reopens after the 11
                                         Finance; GPL-2/3)            September attacks (the
                                                                      package's own example;
                                                                      Zeileis et al. 2005)
sweden_accidents_1961,             92    MASS ``Traffic``, daily      the ``limit`` column: days
sweden_accidents_1962                    motorway accidents on 92     the experimental speed
                                         matched days (cran/MASS,     limit was enforced
                                         GPL-2/3)                     (Svensson 1981)
crimea_disease_mortality           24    HistData ``Nightingale``,    the Sanitary Commission,
                                         monthly zymotic death rate   March 1855: Nightingale's
                                         (cran/HistData, GPL)         two diagrams, before/after
london_christenings                82    HistData ``Arbuthnot``,      1642 and 1661: the Civil
                                         yearly ``Total`` (GPL)       War and Commonwealth, 1642–
                                                                      1660 (the package's docs)
cholera_soho_attacks               43    HistData ``Snow.dates``,     31 Aug 1854: the Broad
                                         daily fatal attacks (GPL)    Street outbreak (Snow 1855)
ansett_melbourne_sydney            282   tsibbledata ``ansett``,      the 1989 pilots' dispute:
                                         weekly, classes summed       the weeks with no passenger
                                         (cran/tsibbledata, GPL-3)    (the package's docs)
fmri_cortex1                       128   astsa ``fmri1`` ``cort1``    stimulus on 32 s, off 32 s:
                                         (cran/astsa, GPL-3)          every 16 scans (its docs)
presidential_approval              114   R datasets ``presidents``    inaugurations: 1953 Q1,
                                         (wch/r-source, GPL-2)        1961 Q1, 1963 Q4, 1969 Q1
us_fertility_rate                  72    wooldridge ``fertil3``       ``ww2`` (1941–45), ``pill``
                                         ``gfr`` (cran/wooldridge,    (from 1963) columns
                                         GPL-3)                       (Whittington et al. 1990)
california_accidents_total,        108   wooldridge ``traffic2``      ``beltlaw`` (Jan 1986),
california_fatal_share                   ``totacc``, ``prcfat``       ``spdlaw`` (65 mph, May
                                                                      1987) columns
anderson_unemployment_claims       107   wooldridge ``ezanders``      the ``ez`` column: enterprise
                                         ``uclms``                    zone from Jan 1984 (Papke
                                                                      1994)
=================================  ====  ===========================  ===========================

References: Cobb, G. W. (1978) Biometrika 65, 243–251; Harvey, A. C. & Durbin, J. (1986) JRSS A
149, 187–227; Reynolds, P. S. (1994) in Case Studies in Biometry, Wiley; Jarrett, R. G. (1979)
Biometrika 66, 191–193; Raftery, A. E. & Akman, V. E. (1986) Biometrika 73, 85–89; Cryer, J. D. &
Chan, K.-S. (2008) Time Series Analysis with Applications in R, Springer; Fokianos, K. & Fried,
R. (2010) J. Time Ser. Anal. 31, 210–225; Frank, C. et al. (2011) NEJM 365, 1771–1780; Perron,
P. (1989) Econometrica 57, 1361–1401; Cahill, N., Rahmstorf, S. & Parnell, A. C. (2015) Environ.
Res. Lett. 10, 084002; Bai, J. & Perron, P. (2003) J. Appl. Econometrics 18, 1–22; Bayer, C. et
al. (2014) Eurosurveillance 19(1), 20665; Zeileis, A., Leisch, F., Kleiber, C. & Hornik, K. (2005)
J. Appl. Econometrics 20, 99–121; Svensson, A. (1981) Scand. J. Statist. 8, 89–100 (via Venables
& Ripley, MASS); Nightingale, F. (1858) Notes on Matters Affecting the Health ... of the British
Army; Arbuthnot, J. (1710) Phil. Trans. 27, 186–190; Snow, J. (1855) On the Mode of
Communication of Cholera, 2nd ed.; Hyndman, R. J. & Athanasopoulos, G. (2021) Forecasting:
Principles and Practice, 3rd ed. (``ansett``); Shumway, R. H. & Stoffer, D. S. (2017) Time
Series Analysis and Its Applications, 4th ed. (``fmri1``); Whittington, L. A., Alm, J. & Peters,
H. E. (1990) AER 80, 545–556; Papke, L. E. (1994) J. Public Econ. 54, 37–49; Wooldridge, J. M.
Introductory Econometrics (``fertil3``, ``traffic2``, ``ezanders``).

The four ``events`` series of strucchange (Boston homicides, German M1, Grossarl) belong to this
group too; ``changepoints_accuracy.py`` adds them, each in the half it has in ``events``. The
other series alternate between the halves in name order (the benchmark's fixed rule, chosen
before any result was seen), each batch on its own so that a later batch leaves the halves of
the earlier ones as they were: the first batch (to ``salmonella_newport``), then the two
airlines of ``SP2001`` (added 2026-11-28 for the random-walk-like prices with a dated shift
that the short judge is made of; chosen by industry, the one the attacks grounded, before
either was run: Delta, the package's own example, and Southwest, the only other airline among
its 500 columns), then the third batch (added 2026-11-28, from ``sweden_accidents_1961``
on; below). Only annotated segments of at least 5 observations are used
(beaver 1's active spells, one or two readings each, are spikes: left out).

The third batch: 12 series from seven more sources, chosen for shapes the first two batches
lack — daily and weekly counts with a switched regime (the Swedish speed-limit days, Ansett's
strike, Soho's cholera), very short series (Nightingale's 24 months), a periodic on/off design
with seven changes (fMRI), a level that drifts within regimes (presidential approval, fertility),
seasonal monthly counts (California accidents, Anderson claims). Each inclusion and annotation
was decided from the package's documentation (its text or its indicator columns) before any
detector ran on the series; what was looked at and left out, and why:

* surveillance's other RKI outbreak series (``k1``, ``m1``, ``m2``, ``m5``, ``n2``, ``q1_nrwh``,
  ``q2``, ``s2``, ``h1_nrwrp``) fail the first batch's rule (outbreaks of ≥ 5 weeks in series
  averaging ≥ 1 case); ``shadar`` and ``ha`` document only "an increase during 2006" (``ha``'s
  ``state``, 4 weeks, is too short); ``campyDE``'s only dated column marks an awareness period,
  not a change of campylobacteriosis; tscount's ``ecoli``, ``influenza`` and ``measles`` and
  surveillance's ``rotaBB`` document no event.
* bfast's ``harvest`` (the harvest date is not in the package), strucchange's ``durab``,
  ``DJIA``, ``PhillipsCurve`` (breaks dated only by a change-point method, or regimes of a
  regression), changepoint's ``Lai2005fig*`` (copy-number boundaries not documented), AER's
  ``ChinaIncome`` (no dates given), wooldridge's ``barium`` (its indicators are 6-month
  analysis windows, not regimes), astsa's ``EQ5`` (2,048 points) and ``sleep1`` (six sleep
  states a minute, changing often).
* Ansett's classes are summed because the package documents "at least two changes in the
  definitions of passenger classes" without dates; the dispute is the only documented change
  of the total. Nightingale's July 1854 rise (the army's cholera at Varna) and Snow's decline
  (gradual; the documentation calls the pump-handle story apocryphal) are not annotated: the
  documentation dates neither. Only the first cortex location of ``fmri1`` is used, so one
  experiment does not weigh four times; the haemodynamic delay (2–3 scans) is inside the
  margin. Ford's two quarters of ``presidents`` are shorter than 5.
"""

from __future__ import annotations

import datetime as dt
import re
import subprocess
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
MIRROR_DEFAULT = Path("/work/.mirror")


class Mirror:
    """Files of fetched public repositories (``<root>/<owner>+<name>/repo``, bare or not)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def git_dir(self, repo: str) -> Path | None:
        base = self.root / repo.replace("/", "+") / "repo"
        for candidate in (base / ".git", base):
            if (candidate / "HEAD").exists() or (candidate / "objects").exists():
                return candidate
        return None

    def read(self, repo: str, path: str) -> bytes:
        git = self.git_dir(repo)
        if git is None:
            raise FileNotFoundError(f"no snapshot of {repo} under {self.root} (fetch it)")
        out = subprocess.run(
            ["git", f"--git-dir={git}", "show", f"HEAD:{path}"], check=True, capture_output=True
        )
        return out.stdout


def _r_object(mirror: Mirror, repo: str, path: str, *, as_list: bool = False) -> Any:
    """The one object of an R data file (.rda/.RData): pyreadr for frames and series, the
    ``rdata`` parser for lists (``as_list``: the surveillance package's outbreak objects)."""
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        file = Path(tmp) / Path(path).name
        file.write_bytes(mirror.read(repo, path))
        if as_list:
            import rdata

            return next(iter(rdata.read_rda(str(file)).values()))
        import pyreadr

        return next(iter(pyreadr.read_r(str(file)).values()))


def _r_source_ts(mirror: Mirror, name: str) -> tuple[FloatArray, list[str]]:
    """Values (and column names) of a series written as R source in R's datasets package."""
    text = mirror.read("wch/r-source", f"src/library/datasets/data/{name}.R").decode()
    body = text[text.index("c(") + 2 :]
    numbers = re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", body[: body.index(")")])
    names = re.findall(r'"([^"]+)"', text[text.find("dimnames") :]) if "dimnames" in text else []
    return np.array([float(v) for v in numbers]), names


def _changes(flags: Any) -> list[int]:
    v = np.asarray(flags).astype(int).ravel()
    return [int(i) for i in np.flatnonzero(np.diff(v)) + 1]


Series = tuple[str, FloatArray, list[int], str]  # name, values, annotation, reference


def _nile(m: Mirror) -> list[Series]:
    values, _ = _r_source_ts(m, "Nile")  # 1871–1970
    return [("nile", values, [1899 - 1871], "Cobb 1978: Aswan dam, 1898/99")]


def _seatbelts(m: Mirror) -> list[Series]:
    flat, names = _r_source_ts(m, "Seatbelts")
    table = flat.reshape(len(names), -1).T  # R fills matrices by column
    law = _changes(table[:, names.index("law")])
    ref = "law column: front belts compulsory from 31 Jan 1983 (Harvey & Durbin 1986)"
    return [
        (f"seatbelts_{label}", table[:, names.index(column)], law, ref)
        for label, column in (("drivers", "drivers"), ("front", "front"),
                              ("van_drivers", "VanKilled"))
    ]  # fmt: skip


def _beavers(m: Mirror) -> list[Series]:
    out = []
    # beaver 1's active spells last one or two readings (spikes, not segments): beaver 2 only
    for k in (2,):
        frame = _r_object(m, "cran/MASS", f"data/beav{k}.rda")
        out.append(
            (
                f"beaver{k}_temperature",
                frame["temp"].to_numpy(float),
                _changes(frame["activ"]),
                "activ column (Reynolds 1994)",
            )
        )
    return out


def _coal(m: Mirror) -> list[Series]:
    dates = _r_object(m, "cran/boot", "data/coal.rda")["date"].to_numpy(float)
    years = np.arange(1851, 1963)
    counts = np.array([np.sum(np.floor(dates) == y) for y in years], dtype=float)
    return [("coal_disasters", counts, [1891 - 1851], "Jarrett 1979; Raftery & Akman 1986")]


def _airmiles(m: Mirror) -> list[Series]:
    values = np.asarray(_r_object(m, "cran/TSA", "data/airmiles.rda"), dtype=float).ravel()
    at = (2001 - 1996) * 12 + 8  # September 2001; the series starts January 1996
    return [("us_airmiles", values, [at], "11 September 2001 (Cryer & Chan 2008, ch. 11)")]


def _tscount(m: Mirror) -> list[Series]:
    campy = np.asarray(_r_object(m, "cran/tscount", "data/campy.RData"), dtype=float).ravel()
    ehec = _r_object(m, "cran/tscount", "data/ehec.RData")
    cols = list(ehec.columns)
    year, week = ehec[cols[0]].to_numpy(int), ehec[cols[1]].to_numpy(int)

    def at(y: int, w: int) -> int:
        return int(np.flatnonzero((year == y) & (week == w))[0])

    return [
        ("campylobacter_quebec", campy, [84 - 1], "level shift at t = 84 (Fokianos & Fried 2010)"),
        (
            "ehec_nrw",
            ehec[cols[2]].to_numpy(float),
            [at(2011, 20), at(2011, 27)],
            "O104:H4 outbreak, May-July 2011 (Frank et al. 2011)",
        ),
    ]


def _nelson_plosser(m: Mirror) -> list[Series]:
    frame = _r_object(m, "cran/urca", "data/nporg.rda")
    out = []
    for name, column in (("us_gnp_real", "gnp.r"), ("us_gnp_nominal", "gnp.n"),
                         ("us_industrial_production", "ip"), ("us_employment", "emp"),
                         ("us_wages_nominal", "wg.n"), ("us_money_stock", "M")):  # fmt: skip
        part = frame[["year", column]].dropna()
        years = part["year"].to_numpy(int)
        crash = int(np.flatnonzero(years == 1930)[0])
        out.append((name, part[column].to_numpy(float), [crash], "the Great Crash (Perron 1989)"))
    return out


def _temperature(m: Mirror) -> list[Series]:
    values = np.asarray(_r_object(m, "cran/astsa", "data/gtemp_both.rda"), dtype=float).ravel()
    points = [y - 1850 for y in (1912, 1940, 1970)]
    return [("global_temperature", values, points, "Cahill, Rahmstorf & Parnell 2015")]


def _real_interest(m: Mirror) -> list[Series]:
    values = np.asarray(_r_object(m, "cran/strucchange", "data/RealInt.rda"), dtype=float)
    # breaks after 1966 Q4, 1972 Q3, 1980 Q2; the series starts 1961 Q1
    points = [(1967 - 1961) * 4, (1972 - 1961) * 4 + 3, (1980 - 1961) * 4 + 2]
    return [("us_real_interest_rate", values.ravel(), points, "Bai & Perron 2003, Table 1")]


_OUTBREAKS = {
    "m3": "outbreak_measles_leer",
    "m4": "outbreak_measles_aachen",
    "n1": "outbreak_norovirus_berlin",
    "s1": "outbreak_salmonella_oranienburg",
    "s3": "outbreak_salmonella_anatum",
}


def _outbreaks(m: Mirror) -> list[Series]:
    out = []
    for key, name in _OUTBREAKS.items():
        obj = _r_object(m, "cran/surveillance", f"data/{key}.RData", as_list=True)
        observed = np.asarray(obj["observed"], dtype=float).ravel()
        state = np.asarray(obj["state"]).ravel()
        out.append((name, observed, _changes(state), "state column: RKI-defined outbreak"))
    return out


def _salmonella_newport(m: Mirror) -> list[Series]:
    obj = _r_object(m, "cran/surveillance", "data/salmNewport.RData", as_list=True)
    observed = np.asarray(obj.observed, dtype=float)
    counts = observed.sum(axis=1) if observed.ndim == 2 else observed
    days = np.asarray(obj.epoch, dtype=float).ravel()  # days since 1970-01-01, week starts
    start = dt.date(1970, 1, 1)
    weeks = np.array([(start + dt.timedelta(days=float(d))).toordinal() for d in days])
    bounds = [dt.date(2011, 10, 1).toordinal(), dt.date(2011, 12, 1).toordinal()]
    points = [int(np.searchsorted(weeks, b)) for b in bounds]
    return [("salmonella_newport", counts, points, "Oct-Nov 2011 outbreak (Bayer et al. 2014)")]


_AIRLINES = {"DAL": "stock_delta_air_lines", "LUV": "stock_southwest_airlines"}


def _sp2001_airlines(m: Mirror) -> list[Series]:
    """Daily closing prices from 31 July to 31 December 2001; trading reopened on 17 September
    (day 49 of the index, which counts days from 30 July), its first observation a new segment."""
    frame = _r_object(m, "cran/strucchange", "data/SP2001.rda", as_list=True)
    days = [int(d) for d in frame.coords[frame.dims[0]].values]
    reopen = days.index(49)
    return [
        (
            name,
            np.asarray(frame.sel({frame.dims[1]: ticker}).values, dtype=float),
            [reopen],
            "trading reopens on 17 Sept 2001 after the attacks (Zeileis et al. 2005)",
        )
        for ticker, name in _AIRLINES.items()
    ]


def _swedish_speed_limit(m: Mirror) -> list[Series]:
    """Daily motorway accidents on the 92 matched days of 1961 and of 1962; the ``limit``
    column says on which days the experimental speed limit was enforced (Svensson 1981)."""
    frame = _r_object(m, "cran/MASS", "data/Traffic.rda")
    out = []
    for year in (1961, 1962):
        days = frame[frame["year"] == year].sort_values("day")
        limit = days["limit"].astype(str).to_numpy() == "yes"
        ref = "limit column: speed limit enforced (Svensson 1981)"
        out.append((f"sweden_accidents_{year}", days["y"].to_numpy(float), _changes(limit), ref))
    return out


def _nightingale(m: Mirror) -> list[Series]:
    """Monthly zymotic-disease death rate of the army in the East, April 1854 - March 1856;
    Nightingale's two diagrams split it at the Sanitary Commission's arrival (March 1855)."""
    frame = _r_object(m, "cran/HistData", "data/Nightingale.RData")
    dates = [str(d)[:7] for d in frame["Date"]]
    ref = "Sanitary Commission, March 1855: Nightingale's before/after panels"
    return [("crimea_disease_mortality", frame["Disease.rate"].to_numpy(float),
             [dates.index("1855-04")], ref)]  # fmt: skip


def _arbuthnot(m: Mirror) -> list[Series]:
    """London christenings 1629-1710 (thousands); the Civil War and Commonwealth, 1642-1660,
    a period of under-registration and lower fertility (the package's documentation)."""
    frame = _r_object(m, "cran/HistData", "data/Arbuthnot.RData")
    years = [int(y) for y in frame["Year"]]
    ref = "Civil War and Commonwealth 1642-1660 (HistData documentation, J. Oeppen)"
    return [("london_christenings", frame["Total"].to_numpy(float),
             [years.index(1642), years.index(1661)], ref)]  # fmt: skip


def _snow(m: Mirror) -> list[Series]:
    """Fatal cholera attacks a day near Broad Street, 19 Aug - 30 Sept 1854 (Snow 1855, Table 1;
    its last row, attacks of unknown date, left out); the outbreak began on 31 August."""
    frame = _r_object(m, "cran/HistData", "data/Snow.dates.RData").dropna(subset=["date"])
    dates = [str(d) for d in frame["date"]]
    ref = "outbreak from 31 Aug 1854 (Snow 1855)"
    return [("cholera_soho_attacks", frame["attacks"].to_numpy(float),
             [dates.index("1854-08-31")], ref)]  # fmt: skip


def _ansett(m: Mirror) -> list[Series]:
    """Weekly Ansett passengers between Melbourne and Sydney, the classes summed (the package
    documents at least two changes of class definitions, which the sum leaves out); the 1989
    pilots' dispute is documented by the weeks with no passenger at all."""
    frame = _r_object(m, "cran/tsibbledata", "data/ansett.rda")
    route = frame[frame["Airports"] == "MEL-SYD"]
    total = route.groupby("Week")["Passengers"].sum().sort_index().to_numpy(float)
    idle = np.flatnonzero(total == 0)  # one contiguous block of weeks
    ref = "the 1989 pilots' dispute: weeks with zero passengers (tsibbledata documentation)"
    return [("ansett_melbourne_sydney", total, [int(idle[0]), int(idle[-1]) + 1], ref)]


def _fmri(m: Mirror) -> list[Series]:
    """BOLD signal at the first cortex location (128 scans, one every 2 s) while a stimulus was
    applied for 32 s and stopped for 32 s in turn: the design switches every 16 scans."""
    frame = _r_object(m, "cran/astsa", "data/fmri1.rda")
    values = frame["cort1"].to_numpy(float)
    ref = "stimulus on/off every 32 s (astsa documentation; Shumway & Stoffer)"
    return [("fmri_cortex1", values, list(range(16, len(values), 16)), ref)]


def _presidents(m: Mirror) -> list[Series]:
    """Quarterly Gallup approval of the US president, 1945-1974, its six missing quarters left
    out; a new segment from each inauguration: Eisenhower 1953 Q1, Kennedy 1961 Q1, Johnson
    1963 Q4, Nixon 1969 Q1 (Truman's starts with the data, Ford's two quarters are too short)."""
    text = m.read("wch/r-source", "src/library/datasets/data/presidents.R").decode()
    body = text[text.index("c(") + 2 :]
    tokens = re.findall(r"NA|-?\d+(?:\.\d+)?", body[: body.index(")")])
    values = np.array([np.nan if t == "NA" else float(t) for t in tokens])
    kept = np.flatnonzero(~np.isnan(values))
    quarters = [(1953 - 1945) * 4, (1961 - 1945) * 4, (1963 - 1945) * 4 + 3, (1969 - 1945) * 4]
    points = [int(np.searchsorted(kept, q)) for q in quarters]
    return [("presidential_approval", values[kept], points, "inaugurations (dated events)")]


def _wooldridge(m: Mirror) -> list[Series]:
    """Three of Wooldridge's time series with their documented policy indicators: US general
    fertility rate 1913-1984 (``ww2`` 1941-1945, ``pill`` from 1963; Whittington, Alm & Peters
    1990), California accidents a month 1981-1989 (``beltlaw`` from January 1986, ``spdlaw``,
    65 mph, from May 1987), total and the fatal share, and monthly unemployment claims in the
    Anderson enterprise zone 1980-1988 (``ez`` from January 1984; Papke 1994)."""

    def frame(name: str) -> Any:
        return _r_object(m, "cran/wooldridge", f"data/{name}.RData")

    fertility, traffic = frame("fertil3"), frame("traffic2")
    claims = frame("ezanders").dropna(subset=["uclms"])  # December 1988 is missing
    laws = sorted({*_changes(traffic["beltlaw"]), *_changes(traffic["spdlaw"])})
    law_ref = "beltlaw, spdlaw columns (Wooldridge, traffic2)"
    return [
        ("us_fertility_rate", fertility["gfr"].to_numpy(float),
         sorted({*_changes(fertility["ww2"]), *_changes(fertility["pill"])}),
         "ww2, pill columns (Whittington, Alm & Peters 1990)"),
        ("california_accidents_total", traffic["totacc"].to_numpy(float), laws, law_ref),
        ("california_fatal_share", traffic["prcfat"].to_numpy(float), laws, law_ref),
        ("anderson_unemployment_claims", claims["uclms"].to_numpy(float), _changes(claims["ez"]),
         "ez column: enterprise zone from Jan 1984 (Papke 1994)"),
    ]  # fmt: skip


LOADERS: tuple[Callable[[Mirror], list[Series]], ...] = (
    _nile,
    _seatbelts,
    _beavers,
    _coal,
    _airmiles,
    _tscount,
    _nelson_plosser,
    _temperature,
    _real_interest,
    _outbreaks,
    _salmonella_newport,
)
# added later: a batch alternates between the halves on its own (module docstring)
LATER_BATCHES: tuple[tuple[Callable[[Mirror], list[Series]], ...], ...] = (
    (_sp2001_airlines,),
    (_swedish_speed_limit, _nightingale, _arbuthnot, _snow, _ansett, _fmri, _presidents,
     _wooldridge),
)  # fmt: skip


def load_short(root: Path) -> tuple[list[list[Series]], list[str]]:
    """Every series whose repository is fetched, batch by batch (:data:`LOADERS`, then each of
    :data:`LATER_BATCHES`), and a note for each source that is missing."""
    mirror = Mirror(root)
    batches: list[list[Series]] = []
    notes = []
    for loaders in (LOADERS, *LATER_BATCHES):
        series: list[Series] = []
        for loader in loaders:
            try:
                series += loader(mirror)
            except (FileNotFoundError, subprocess.CalledProcessError, ImportError) as exc:
                notes.append(f"short: {loader.__name__.strip('_')} skipped ({exc})")
        for name, values, points, reference in series:
            _check(name, values, points, reference)
        batches.append(series)
    return batches, notes


def _check(name: str, values: np.ndarray, points: list[int], reference: str) -> None:
    """A series the corpus may hold: 15–800 finite readings, annotated segments of at least 5
    (the corpus's rule), and a reference."""
    bounds = np.diff([0, *points, len(values)])
    problem = (
        "not 15-800 readings" if not 15 <= len(values) <= 800
        else "a value that is not finite" if not np.isfinite(values).all()
        else "annotations not increasing" if points != sorted(set(points))
        else "an annotated segment under 5 readings" if bounds.min() < 5
        else "no reference" if not reference
        else None
    )  # fmt: skip
    if problem:
        raise ValueError(f"short corpus: {name}: {problem}")
