"""Reports over many configurations (issue 25, item 4): past MAX_GROUP_TABLES (sweep, configuration) groups, a
table kind that is one table per group (epoch time, step phases) becomes one table with the configuration
in its first column.

Why: 5,000 sweeps made 10,000 small tables that nobody reads in report.md, and building them one small
DataFrame at a time took most of `hpml report`'s 20 s on 2 cores (pandas' to_dict costs ~2 ms per frame
whatever its size). The rows, their numbers and their CSV (<name>.csv: the groups one after the other, in
the same order) are the same either way; only the Markdown and LaTeX layout changes. docs/decisions.md,
"Hardening (issue 25)".
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List

import pandas as pd

from hpml.report_kit.sections import MAX_GROUP_TABLES, Section, Table

GROUP_KEYS = ["sweep", "group_key"]


def group_count(table: pd.DataFrame) -> int:
    """How many (sweep, configuration) groups the table's rows span. Python tuples of the two columns:
    pandas' drop_duplicates on string columns cost 0.1 s per call over 10,000 rows."""
    if table.empty:
        return 0
    return len(set(zip(*(table[key].tolist() for key in GROUP_KEYS))))


def many_groups(table: pd.DataFrame) -> bool:
    """Whether the table's rows span more than MAX_GROUP_TABLES (sweep, configuration) groups."""
    return group_count(table) > MAX_GROUP_TABLES


def records(frame: pd.DataFrame) -> List[Dict[str, Any]]:
    """frame.to_dict("records"), the same Python values (NaN and pd.NA kept), from whole columns as object
    arrays: to_dict, and tolist, walk pandas' string arrays an element at a time (0.3 s per 10,000 rows)."""
    names = list(frame.columns)  # once: iterating the Index itself is a pandas call per name per row
    columns = [_python_values(frame[name]) for name in names]
    return [dict(zip(names, values)) for values in zip(*columns)]


def _python_values(column: pd.Series) -> List[Any]:
    values = column.to_numpy(dtype=object).tolist()
    if getattr(column.dtype, "na_value", None) is pd.NA and column.hasnans:  # a nullable integer column's
        values = [None if value is pd.NA else value for value in values]     # pd.NA: None, as to_dict gives
    return values


TITLE_KEYS = ("sweep", "parallel", "model", "precision")


def configuration(r: Dict[str, Any], labels: Dict[str, str]) -> str:
    """What a per-group table's title said: sweep · parallel mode (· model · precision, where the table has
    them) and the items that tell the group from the others of its sweep."""
    named = " · ".join(str(r[key]) for key in TITLE_KEYS if key in r)
    return f"{named} {labels.get(r['group_key'], '')}".rstrip()


def combined_section(name: str, title: str, intro: str, headers: List[str],
                     row: Callable[[Dict[str, Any]], List[Any]], table: pd.DataFrame,
                     labels: Dict[str, str]) -> Section:
    """One level-3 section whose one table holds every group's rows, each led by its configuration, in the
    per-group tables' order (groups sorted, rows in table order within each)."""
    frame = table.sort_values(GROUP_KEYS, kind="stable", ignore_index=True)
    body = [[configuration(r, labels)] + row(r) for r in records(frame)]
    groups = group_count(frame)
    intro = (f"{groups} configurations in one table (one table each past {MAX_GROUP_TABLES} would not be "
             f"read). {intro}")
    return Section(f"{title}: {groups} configurations", markdown=intro,
                   tables=[Table(name, ["configuration"] + headers, body, frame)], level=3)
