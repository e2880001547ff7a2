"""A picture of one traced run (`hostir-run --timeline out.png`): one row per rank and
stream (per rank on CPU ranks, where the host's clock is the only one), a bar per piece of
work coloured by what it does: communication or compute.

Needs matplotlib, an optional dependency (`pip install 'hostir[plot]'`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from .trace import COMMUNICATION, COMPUTE, Trace, device_events

COLOURS = {COMMUNICATION: "tab:orange", COMPUTE: "tab:blue"}


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ValueError("drawing a timeline needs matplotlib: pip install 'hostir[plot]'") from None


def rows(trace: Trace) -> dict[str, list[tuple[float, float, str]]]:
    """Row name -> (start µs, end µs, kind) of every piece of work, on the common clock."""
    shift = trace.base_ns / 1e3
    found: dict[str, list[tuple[float, float, str]]] = {}
    if trace.device_clock:
        for event in device_events(trace):
            kind = event["args"]["hostir kind"]
            if kind in COLOURS:
                row = f"rank {trace.rank} stream {event['args'].get('stream', event.get('tid'))}"
                found.setdefault(row, []).append(_bar(event, shift, kind))
    else:
        for event in trace.events:
            kind = trace.kinds.get(event.get("name", ""))
            if event.get("ph") == "X" and kind in COLOURS:
                found.setdefault(f"rank {trace.rank} (host clock)", []).append(_bar(event, shift, kind))
    return found


def _bar(event: dict, shift: float, kind: str) -> tuple[float, float, str]:
    return event["ts"] + shift, event["ts"] + event.get("dur", 0) + shift, kind


def draw(traces: Sequence[Trace], path: str | os.PathLike) -> None:
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    by_row = {name: bars for trace in traces for name, bars in sorted(rows(trace).items())}
    origin = min((start for bars in by_row.values() for start, _, _ in bars), default=0.0)
    figure, axes = plt.subplots(figsize=(12, 0.5 + 0.45 * max(len(by_row), 1)))
    for index, bars in enumerate(by_row.values()):
        axes.broken_barh([((start - origin) / 1e3, (end - start) / 1e3) for start, end, _ in bars], (index - 0.4, 0.8),
                         facecolors=[COLOURS[kind] for _, _, kind in bars])
    axes.set_yticks(range(len(by_row)), list(by_row))
    axes.invert_yaxis()
    axes.set_xlabel("ms since the first piece of work")
    clock = "device" if all(t.device_clock for t in traces) else "host"
    axes.set_title(f"@{traces[0].program}: one run on {len(traces)} rank(s), {clock} clock")
    axes.legend(handles=[Patch(color=colour, label=kind) for kind, colour in COLOURS.items()], loc="upper right")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
