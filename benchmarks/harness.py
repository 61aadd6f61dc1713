"""What every benchmark shares: its command line and the provenance beside its figures.

A figure means little without the machine that gave it, so every benchmark's report holds the
same block, written here once (``provenance``): the processor, its core count, the threads
used, the fp32 matmul peak measured at those threads (to set figures from two machines side by
side), torch's version, the commit and the command that reruns it. ``parser`` gives every
benchmark the same ``--threads``, ``--quick`` and ``--json``; ``write_report`` writes the JSON.
Benchmarks are run as scripts (``python benchmarks/NAME.py``), so this module is imported by
name from the script's own folder.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def at_least_1(text: str) -> int:
    """argparse type: an integer >= 1 (a count of steps, threads, repeats)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def parser(doc: str, *, threads: int = 2, quick: str = "a smoke test") -> argparse.ArgumentParser:
    """An argument parser described by DOC's first line, with the flags every benchmark has:
    --threads (intra-op threads, default THREADS), --quick (QUICK) and --json FILE."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument(
        "--threads", type=at_least_1, default=threads, help=f"intra-op threads (default {threads})"
    )
    ap.add_argument("--quick", action="store_true", help=quick)
    ap.add_argument("--json", type=Path, help="write the report here (JSON)")
    return ap


def processor() -> str:
    """The CPU's model name (Linux), else what the platform module says."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def commit() -> str | None:
    """The checkout's commit (short), with "+changes" when tracked files differ from it; None
    outside a git checkout."""
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        changed = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+changes" if changed else "")


def shown(word: str) -> str:
    """WORD as a report shows it: a path inside the project relative to it, any other absolute
    path by its name only (no path of the machine that ran it is recorded)."""
    flag, eq, value = word.partition("=") if word.startswith("--") else ("", "", word)
    path = Path(value)
    if path.is_absolute():
        value = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
    return flag + eq + value


def command(argv: list[str] | None = None) -> str:
    """The command line that reruns this benchmark, from the project's root."""
    script = Path(sys.argv[0]).resolve()
    script_shown = shown(str(script)) if script.is_relative_to(ROOT) else script.name
    args = sys.argv[1:] if argv is None else argv
    return shlex.join(["python", script_shown, *map(shown, args)])


def provenance(
    threads: int, device: str = "cpu", *, quick: bool = True, argv: list[str] | None = None
) -> dict:
    """The block every report holds: "machine" (processor, cores, threads, device, matmul peak
    in GFLOP/s at THREADS, measured on two sizes if QUICK else three; torch), "commit" and
    "command". Sets torch's thread count to THREADS."""
    import torch  # here, not above: data_memory.py's children measure their memory without it

    from aiayn.flops import matmul_peak

    torch.set_num_threads(threads)
    dev = torch.device(device)
    machine = {
        "processor": processor() if dev.type == "cpu" else torch.cuda.get_device_name(dev),
        "cpu_count": os.cpu_count(),
        "threads": threads,
        "device": device,
        "matmul_peak_gflops": round(matmul_peak(dev, quick=quick) / 1e9, 1),
        "torch": torch.__version__,
    }
    return {"machine": machine, "commit": commit(), "command": command(argv)}


def write_report(path: Path | None, report: dict) -> None:
    """Write REPORT as JSON to PATH (nothing without one)."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"written: {shown(str(path.resolve()))}")
