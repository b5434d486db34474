"""Packs the raw sweeps of docs/results into one archive per measurement folder (issue 32, item 5), so that a clone
and a grep show code first: every folder that holds sweep folders (a manifest.json inside) gets `sweeps.tgz` with
those sweeps and the folder's raw *.log files; the study's README, its report/ (Markdown, CSV, LaTeX, PNG) and its
scripts stay in the tree. `tar xzf <folder>/sweeps.tgz -C <folder>` puts every sweep back where the READMEs name it.

    python tools/pack_sweeps.py [docs/results]      # then: git add -A docs/results

Deterministic: members sorted, owner and times zeroed, so packing the same sweeps twice gives the same bytes.
"""

from __future__ import annotations

import gzip
import io
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import List

ARCHIVE = "sweeps.tgz"


def sweep_folders(root: Path) -> List[Path]:
    return sorted(manifest.parent for manifest in root.rglob("manifest.json") if ARCHIVE not in manifest.parts)


def _normalized(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    return info


def tracked(path: Path) -> List[Path]:
    """The files git tracks under path: what was committed, not what a run left beside it (submitit's pickles)."""
    out = subprocess.run(["git", "ls-files", "-z", "--", str(path)], capture_output=True, check=True).stdout
    return sorted(Path(name) for name in out.decode().split("\0") if name)


def pack(folder: Path, members: List[Path]) -> Path:
    """folder/sweeps.tgz holding the tracked files of `members` (paths inside folder), added to an existing
    archive's members."""
    archive = folder / ARCHIVE
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        if archive.exists():  # an earlier pack of this folder: keep what it holds
            with tarfile.open(archive) as old:
                for info in old.getmembers():
                    tar.addfile(info, old.extractfile(info) if info.isfile() else None)
        for member in members:
            for path in tracked(member):
                tar.add(path, arcname=str(path.relative_to(folder)), recursive=False, filter=_normalized)
    with gzip.GzipFile(archive, "wb", mtime=0) as out:
        out.write(buffer.getvalue())
    return archive


def main(argv: List[str]) -> int:
    root = Path(argv[0] if argv else "docs/results")
    by_folder = {}
    for sweep in sweep_folders(root):
        by_folder.setdefault(sweep.parent, []).append(sweep)
    for folder, sweeps in sorted(by_folder.items()):
        logs = [p for p in tracked(folder) if p.parent == folder and p.suffix == ".log"]
        archive = pack(folder, sweeps + logs)
        for sweep in sweeps:
            shutil.rmtree(sweep)
        for log in logs:
            log.unlink()
        print(f"{archive}: {len(sweeps)} sweep(s), {len(logs)} log(s), {archive.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
