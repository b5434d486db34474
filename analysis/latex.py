"""LaTeX tables (booktabs) from the same display rows as the Markdown tables. Formatting only.

    latex_table(["N", "time [s]"], [[1, "4.000 ± 0.000"]], caption="...", label="tab:time")

Cells are escaped for LaTeX (& % $ # _ { } ~ ^ \\), and "±" becomes $\\pm$, so a cell's text is what the
reader of the Markdown table sees. Needs \\usepackage{booktabs} in the document.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

_ESCAPES = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}
_SYMBOLS = {"±": r"$\pm$", "×": r"$\times$", "—": "---", "≥": r"$\geq$", "≤": r"$\leq$"}


# One pass over the text (str.translate): every replacement is of one character, and what a replacement
# writes is not escaped again. A character at a time in Python cost 2 s over a 10,000-row table.
_TRANSLATION = str.maketrans({**_ESCAPES, **_SYMBOLS})


def escape(text: Any) -> str:
    return str(text).translate(_TRANSLATION)


def latex_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], caption: str, label: str) -> str:
    rows = list(rows)
    spec = "l" + "r" * (len(headers) - 1)
    lines = [r"\begin{table}[ht]", r"\centering", rf"\caption{{{escape(caption)}}}", rf"\label{{{label}}}",
             rf"\begin{{tabular}}{{{spec}}}", r"\toprule", " & ".join(escape(h) for h in headers) + r" \\",
             r"\midrule"]
    lines += [" & ".join(escape(cell) for cell in row) + r" \\" for row in rows]
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"
