"""Errors the user can fix: LaunchError, and one clear line for a config error, whatever layer raised it
(Hydra's override grammar, OmegaConf or a schema check)."""

from __future__ import annotations

import dataclasses
from typing import Iterator, Optional

from hpml.launcher.override_errors import parse_error_line


class LaunchError(Exception):
    """A problem the user can fix (launch, status, resume); `hpml` prints it as one line per problem and
    exits 2, with nothing written or submitted."""


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def _allowed_keys(object_type: Optional[type]) -> str:
    if object_type is None or not dataclasses.is_dataclass(object_type):
        return ""
    return "; allowed keys: " + ", ".join(f.name for f in dataclasses.fields(object_type))


def _squash(text: str) -> str:
    """Hydra's multi-line messages as one line."""
    parts = [line.strip() for line in text.replace("\t", " ").splitlines() if line.strip()]
    return " ".join(p if p.endswith((":", ".", ";")) else p + ";" for p in parts).rstrip(";")


def one_line(error: BaseException) -> str:
    # imported here: the verbs that only raise LaunchError (status, resume) start without Hydra (issue 41)
    from hydra.errors import MissingConfigException, OverrideParseException
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

    from hpml.conf.validation import ConfigValueError

    for link in _chain(error):
        if isinstance(link, ConfigValueError):
            return str(link)
        if isinstance(link, OverrideParseException):
            return parse_error_line(link.override, link.message)
        if isinstance(link, MissingConfigException) and link.options:
            key = link.missing_cfg_file.partition("/")[0]  # 'experiment/tiny/nope' came from experiment=tiny/nope
            return (f"no config '{link.missing_cfg_file}'; available options: {', '.join(link.options)} "
                    f"(set {key}=<option>)")
        if isinstance(link, OmegaConfBaseException) and getattr(link, "full_key", None):
            message = getattr(link, "msg", None) or str(link).splitlines()[0]
            message = message.splitlines()[0]
            if isinstance(link, (ConfigKeyError, ConfigAttributeError)) and "not in" in message:
                return f"unknown key '{link.full_key}'{_allowed_keys(getattr(link, 'object_type', None))}"
            return f"{link.full_key}: {message}"
    return _squash(str(error))
