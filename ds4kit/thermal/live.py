"""The live terminal view (rich): elapsed time, watched temperature, key readings, throttle reasons."""
from __future__ import annotations

from typing import Any

from ds4kit.thermal.sensor_base import metric_kind, metric_unit

_ORDER = {"temperature": 0, "power": 1, "clock": 2, "utilisation": 3}


class LiveView:
    def __init__(self, warn_at: float | None, abort_at: float | None, max_rows: int = 14):
        from rich.console import Console

        self.console = Console(stderr=True)
        self.enabled = self.console.is_terminal
        self.warn_at, self.abort_at, self.max_rows = warn_at, abort_at, max_rows
        self._live = None

    def __enter__(self) -> "LiveView":
        if self.enabled:
            from rich.live import Live

            self._live = Live(console=self.console, auto_refresh=False, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)

    def _style(self, temp: float | None) -> str:
        if temp is None:
            return "dim"
        if self.abort_at is not None and temp >= self.abort_at:
            return "bold red"
        if self.warn_at is not None and temp >= self.warn_at:
            return "yellow"
        return "green"

    def update(self, rec: dict[str, Any], watcher) -> None:
        if self._live is None:
            return
        from rich.table import Table

        temp, key = watcher.last_temp
        head = f"t={rec['t']:.0f}s  {rec['phase']}  watched {key or '-'} = "
        table = Table(title=head + (f"[{self._style(temp)}]{temp:g} C[/]" if temp is not None else "n/a"),
                      show_header=True, header_style="bold", title_justify="left")
        table.add_column("metric")
        table.add_column("value", justify="right")
        items = sorted(rec["values"].items(), key=lambda kv: (_ORDER.get(metric_kind(kv[0]), 9), kv[0]))
        for k, v in items[: self.max_rows]:
            style = self._style(v) if metric_kind(k) == "temperature" else ""
            table.add_row(k, f"[{style}]{v:g} {metric_unit(k)}[/]" if style else f"{v:g} {metric_unit(k)}")
        if len(items) > self.max_rows:
            table.add_row(f"... {len(items) - self.max_rows} more in the CSV", "")
        for name, thr in rec.get("throttle", {}).items():
            if thr.get("active"):
                table.add_row(f"{name} reasons", ", ".join(thr["active"]))
        self._live.update(table, refresh=True)
