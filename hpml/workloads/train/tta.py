"""The evaluation record of a run and its time to accuracy (contract/saved_model.py says what result.json
holds): TTA is the wall-clock from the start of training to the end of the first evaluation whose top-1 is at
or above the target, given with and without the time spent evaluating (Coleman et al. 2019 count it in)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional


@dataclass
class EvaluationLog:
    epoch: List[int] = field(default_factory=list)  # 1-based: evaluated after this many epochs
    step: List[int] = field(default_factory=list)  # optimizer steps done by then
    top1: List[float] = field(default_factory=list)
    loss: List[float] = field(default_factory=list)
    elapsed_s: List[float] = field(default_factory=list)  # since training started, evaluations included
    train_elapsed_s: List[float] = field(default_factory=list)  # the same without evaluation time
    eval_s: List[float] = field(default_factory=list)

    def record(self, epoch: int, step: int, top1: float, loss: float, elapsed_s: float, eval_s: float) -> None:
        self.epoch.append(epoch)
        self.step.append(step)
        self.top1.append(top1)
        self.loss.append(loss)
        self.elapsed_s.append(elapsed_s)
        self.eval_s.append(eval_s)
        self.train_elapsed_s.append(elapsed_s - sum(self.eval_s))

    def first_at(self, target: Optional[float]) -> Optional[int]:
        """Index of the first evaluation at or above the target; None without a target or when none is."""
        return next((i for i, top1 in enumerate(self.top1) if target is not None and top1 >= target), None)

    def as_dict(self) -> Dict[str, List[Any]]:
        return asdict(self)


def time_to_accuracy(log: EvaluationLog, target: Optional[float]) -> Dict[str, Any]:
    """derived.tta: the first evaluation at or above the target; not converged (no times) when none is."""
    first = log.first_at(target)
    if first is None:
        return {"target": target, "converged": False, "tta_s": None, "tta_train_s": None,
                "epochs_to_target": None, "steps_to_target": None}
    return {"target": target, "converged": True, "tta_s": log.elapsed_s[first],
            "tta_train_s": log.train_elapsed_s[first], "epochs_to_target": log.epoch[first],
            "steps_to_target": log.step[first]}
