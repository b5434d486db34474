"""One line for an override that does not parse (issue 25, item 2): which override, its key, and what is
wrong with it, instead of Hydra's grammar message alone ("no viable alternative at input 'range(1'"), which
leaves the user to guess which of several overrides it meant.

Hydra's OverridesParser raises OverrideParseException with the override's text and one of three messages:
a lexer error with a caret under the column (an unclosed quote, a character a key cannot hold), a parser
error ("no viable alternative", "extraneous input ... expecting ...", "missing EQUAL"), or an error while
evaluating a sweep function (range, choice, an unknown function). The line keeps Hydra's words (shortened)
and adds, where it can tell, the column of an unbalanced bracket or an unclosed quote.
"""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

GRAMMAR_URL = "https://hydra.cc/docs/1.2/advanced/override_grammar/basic"
LEXER_PREFIX = "LexerNoViableAltException: "
CLOSING = {"(": ")", "[": "]", "{": "}"}
# Hydra lists every token it would have accepted ("expecting {':', BRACKET_OPEN, ...}"): noise on one line
EXPECTING_SET = re.compile(r" expecting \{[^}]*\}")


def override_key(override: str) -> str:
    """The key an override sets: '+a.b@pkg=1' -> 'a.b'; '' when there is none ('=3')."""
    return override.partition("=")[0].lstrip("~+").partition("@")[0].strip()


def _skip_escape(text: str, i: int) -> int:
    return i + 2 if text[i] == "\\" else i + 1


def balance_problem(text: str) -> Optional[str]:
    """The first unbalanced bracket or unclosed quote in an override, with its 1-based column; None if
    brackets and quotes pair up (outside quotes; a backslash escapes the next character)."""
    stack: List[Tuple[str, int]] = []
    quote: Optional[Tuple[str, int]] = None
    i = 0
    while i < len(text):
        char = text[i]
        if quote is not None:
            if char == quote[0]:
                quote = None
        elif char in "'\"":
            quote = (char, i)
        elif char in CLOSING:
            stack.append((char, i))
        elif char in CLOSING.values():
            if not stack:
                return f"{char!r} at column {i + 1} closes nothing"
            opened, at = stack.pop()
            if CLOSING[opened] != char:
                return f"{opened!r} at column {at + 1} is closed by {char!r} at column {i + 1}"
        i = _skip_escape(text, i)
    if quote is not None:
        return f"the quote {quote[0]} at column {quote[1] + 1} is never closed"
    if stack:
        opened, at = stack[-1]
        return f"{opened!r} at column {at + 1} is never closed"
    return None


def _hydra_detail(override: str, message: str) -> str:
    """Hydra's message without its link and without the override it repeats, on one line."""
    lines = [line.strip() for line in message.splitlines()
             if line.strip() and not line.strip().startswith("See https://hydra.cc")]
    if lines and lines[0].startswith(LEXER_PREFIX):
        caret = message.splitlines()[1] if len(message.splitlines()) > 1 else ""
        column = len(caret) - len(LEXER_PREFIX)  # Hydra right-aligns '^' under the offending character
        if 1 <= column <= len(override):
            return f"unexpected character {override[column - 1]!r} at column {column}"
        return "unexpected character"
    if lines and lines[0] == f"Error parsing override '{override}'":
        lines = lines[1:]
    return EXPECTING_SET.sub("", "; ".join(lines))


def parse_error_line(override: str, message: str) -> str:
    """The one line for an override Hydra could not parse (message: OverrideParseException's)."""
    key = override_key(override)
    hints = [balance_problem(override)]
    if "=" not in override and not override.startswith("~"):
        hints.append("no '=': write key=value (or ~key to delete a key)")
    what = "; ".join([hint for hint in hints if hint] + [_hydra_detail(override, message)])
    return (f"override {override!r} (key {key or 'missing'}) does not parse: {what} "
            f"(override grammar: {GRAMMAR_URL})")


def keyless_override(argument: str) -> Optional[str]:
    """One line for an override that names no key ('=3', '+=x', '~'), which Hydra parses but then fails on
    with a message that names nothing ("Config group override must be a string or a list. Got int");
    None for any other argument."""
    if argument.startswith("-") or not ("=" in argument or argument.startswith("~")):
        return None
    if override_key(argument):
        return None
    return f"override {argument!r} names no key: write key=value (e.g. workload.batch_size=64)"
