"""`fpgagen report`: one self-contained HTML page about a design (data, plots, page)."""

from .page import write_report

__all__ = ["write_report"]
