"""How a report writes a number, written once for every study (issue 42: the same helpers were written again in
six report modules). Each takes the value as measured (seconds, bytes, fractions) and a format spec; a missing
value (None, NaN, pandas' NA) is a dash, never "nan"."""

from __future__ import annotations

import math
from typing import Any, Optional

from hpml.contract.units import MS_PER_S

NO_NUMBER = "—"  # a cell with no number
# The dash of the tables that mirror a paper's layout (PALEO's, the CUDA vector-add study's), kept as they print
NO_NUMBER_SHORT = "–"
SI_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def is_missing(value: Any) -> bool:
    """None, pandas' NA or a float NaN: a cell with no number."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or str(value) == "<NA>"


def number(value: Any, fmt: str, scale: float = 1.0, unit: str = "", missing: str = NO_NUMBER) -> str:
    """value x scale in `fmt`, then `unit`: number(0.912, ".1f", 100, " %") -> "91.2 %"; `missing` where there is
    none (an empty text counts as none: a CSV cell read back)."""
    if is_missing(value) or value == "":
        return missing
    return f"{value if scale == 1 else value * scale:{fmt}}{unit}"


def mean_std(mean: Any, std: Any, fmt: str, scale: float = 1.0, n: Optional[Any] = None,
             missing: str = NO_NUMBER) -> str:
    """"mean ± std (n=N)" in `fmt`, scaled; no "± std" where there is no spread (one run), no "(n=...)" where n is
    None, `missing` where there is no mean."""
    if is_missing(mean):
        return missing
    text = number(mean, fmt, scale)
    if not is_missing(std):
        text += f" ± {number(std, fmt, scale)}"
    return text if n is None else f"{text} (n={n})"


def ms(seconds: Any, fmt: str = ".2f", missing: str = NO_NUMBER) -> str:
    """Seconds shown as milliseconds: ms(0.0123) -> "12.30"."""
    return number(seconds, fmt, MS_PER_S, missing=missing)


def three_digits(value: Any, wide_from: float = 1000, scale: float = 1.0, missing: str = NO_NUMBER) -> str:
    """value x scale to 3 significant digits, or every integer digit with thousands separators from `wide_from`
    on: three_digits(0.01234) -> "0.0123", three_digits(12345.6) -> "12,346"."""
    if is_missing(value):
        return missing
    value = value if scale == 1 else value * scale
    return f"{value:,.0f}" if value >= wide_from else f"{value:.3g}"


def percent(share: Any, signed: bool = False, missing: str = NO_NUMBER) -> str:
    """A fraction as a percentage to 0.1: percent(0.0712) -> "7.1%", percent(0.0712, signed=True) -> "+7.1%"."""
    if is_missing(share):
        return missing
    return f"{share:+.1%}" if signed else f"{share:.1%}"


def si(value: Any, unit: str = "", missing: str = NO_NUMBER_SHORT) -> str:
    """3 significant digits with a decimal prefix: 3211264 -> "3.21 M", 1728 -> "1.73 k", 0 -> "0"."""
    if is_missing(value):
        return missing
    for factor, prefix in SI_PREFIXES:
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}".rstrip() if value else "0"


def row_mean_std(row: Any, prefix: str, fmt: str, scale: float = 1.0, n_key: str = "runs") -> str:
    """A table row's row[<prefix>_mean] ± row[<prefix>_std] (n=row[n_key]), as mean_std writes it."""
    return mean_std(row[f"{prefix}_mean"], row[f"{prefix}_std"], fmt, scale, n=row[n_key])
