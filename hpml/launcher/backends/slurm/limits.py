"""How many more jobs SLURM's submit limits let this user queue, read before submitting (issue 35).

The limits are the association's (MaxSubmitJobs of the user's association, GrpSubmitJobs of the account's) and
the QOS's (MaxSubmitJobsPerUser, MaxSubmitJobsPerAccount, GrpSubmitJobs), from `sacctmgr show assoc|qos`. SLURM
counts each task of a job array as one job against these limits (SLURM's job_array.html; NCSA's job-arrays page:
"each job within a job array is counted as one batch job"), and so does this module: one array task per
cluster.points_per_job points. The jobs already counted come from one `squeue -r` (array tasks one per line).

The parsers take sacctmgr's and squeue's text and return values (tested on literal inputs); only `submit_room`
calls the commands. Where accounting does not answer (no slurmdbd) there is no limit to read: everything is queued.
"""

from __future__ import annotations

import getpass
import subprocess
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

ASSOC_FIELDS = ("Account", "User", "Partition", "MaxSubmitJobs", "GrpSubmitJobs", "DefaultQOS")
QOS_FIELDS = ("Name", "MaxSubmitJobsPerUser", "MaxSubmitJobsPerAccount", "GrpSubmitJobs")
DEFAULT_QOS = "normal"  # SLURM's default QOS name, where the association names none


@dataclass(frozen=True)
class Limit:
    """One submit limit: where it is set, its value, and how many jobs it already counts."""
    where: str  # "QOS normal", "association root/hpml", "account hpml"
    name: str  # MaxSubmitJobsPerUser, ...
    value: int
    counted: int
    whose: str  # "of yours", "of account hpml", "in QOS normal"

    @property
    def room(self) -> int:
        return max(0, self.value - self.counted)

    def describe(self) -> str:
        return f"{self.where} {self.name}={self.value} ({self.counted} {self.whose} already queued)"


def parse_records(text: str, fields: Sequence[str]) -> List[Dict[str, str]]:
    """`sacctmgr -nP show ... format=<fields>` -> one dict per line."""
    return [dict(zip(fields, line.split("|"))) for line in text.splitlines() if line.count("|") == len(fields) - 1]


def number(text: str) -> Optional[int]:
    return int(text) if text.strip().isdigit() else None


def parse_queue(text: str) -> List[Tuple[str, str, str]]:
    """`squeue -h -r -o %u|%a|%q` -> (user, account, qos) per queued job (array tasks one each)."""
    return [tuple(line.split("|")[:3]) for line in text.splitlines() if line.count("|") >= 2]


def limits_of(user: str, account: str, qos_name: Optional[str], assocs: List[Dict[str, str]],
              qoses: List[Dict[str, str]], queue: List[Tuple[str, str, str]]) -> List[Limit]:
    """The submit limits that apply to `user` submitting under `account` and `qos_name` (None: the association's
    default QOS), each with the queued jobs it counts."""
    mine = [a for a in assocs if a.get("Account") == account and a.get("User") == user]
    whole = [a for a in assocs if a.get("Account") == account and not a.get("User")]
    qos_name = qos_name or next((a["DefaultQOS"] for a in mine if a.get("DefaultQOS")), DEFAULT_QOS)
    limits = []
    for a in mine:
        if number(a.get("MaxSubmitJobs", "")) is not None:
            limits.append(Limit(f"association {user}/{account}", "MaxSubmitJobs", number(a["MaxSubmitJobs"]),
                                sum(u == user and acc == account for u, acc, _ in queue), "of yours"))
    for a in whole:
        if number(a.get("GrpSubmitJobs", "")) is not None:
            limits.append(Limit(f"account {account}", "GrpSubmitJobs", number(a["GrpSubmitJobs"]),
                                sum(acc == account for _, acc, _ in queue), f"of account {account}"))
    for q in (q for q in qoses if q.get("Name") == qos_name):
        counts = {"MaxSubmitJobsPerUser": (sum(u == user and qq == qos_name for u, _, qq in queue), "of yours"),
                  "MaxSubmitJobsPerAccount": (sum(acc == account and qq == qos_name for _, acc, qq in queue),
                                              f"of account {account}"),
                  "GrpSubmitJobs": (sum(qq == qos_name for _, _, qq in queue), f"in QOS {qos_name}")}
        for name, (counted, whose) in counts.items():
            if number(q.get(name, "")) is not None:
                limits.append(Limit(f"QOS {qos_name}", name, number(q[name]), counted, whose))
    return limits


def tightest(limits: Sequence[Limit]) -> Optional[Limit]:
    return min(limits, key=lambda limit: limit.room, default=None)


def _run(command: List[str]) -> Optional[str]:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def submit_room(cluster: str, accounts_qos: Sequence[Tuple[Optional[str], Optional[str]]]) -> Optional[Limit]:
    """The tightest submit limit over the sweep's (account, qos) pairs (None: the cluster's defaults), or None
    where none applies or accounting cannot be asked."""
    user = getpass.getuser()
    where = [f"cluster={cluster}"] if cluster else []
    assoc_text = _run(["sacctmgr", "-nP", "show", "assoc", *where, f"format={','.join(ASSOC_FIELDS)}"])
    qos_text = _run(["sacctmgr", "-nP", "show", "qos", f"format={','.join(QOS_FIELDS)}"])
    if assoc_text is None or qos_text is None:
        return None
    assocs, qoses = parse_records(assoc_text, ASSOC_FIELDS), parse_records(qos_text, QOS_FIELDS)
    default_account = (_run(["sacctmgr", "-nP", "show", "user", user, "format=DefaultAccount"]) or "").strip() \
        or None
    limits = []
    for account, qos in accounts_qos:
        if account or default_account:
            limits.append((account or default_account, qos))
    if not limits:
        return None
    queue_text = _run(["squeue", "-h", "-r", "-o", "%u|%a|%q"])
    queue = parse_queue(queue_text or "")
    return tightest([limit for account, qos in limits
                     for limit in limits_of(user, account, qos, assocs, qoses, queue)])
