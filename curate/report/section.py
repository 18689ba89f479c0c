"""A report section a stage kind shows: what it reads from the run, and the HTML it makes of that.

A stage names its sections in its facets (`Facets.REPORT`, `"module:NAME"`); `report/build.py` gathers and
renders every section the run's steps name, where the first step naming it stands, and names no stage kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Section:
    """`gather(run)` reads the run (a `RunView`) into small data; `render(run, data, colors)` gives the section's
    HTML (`page.section(anchor, title, ...)`), or "" to leave it out. `anchor` and `title` also name it in the
    page's navigation."""

    anchor: str
    title: str
    gather: Callable
    render: Callable
