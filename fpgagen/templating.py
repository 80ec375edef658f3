"""The one jinja2 environment factory for fpgagen's templates (HLS C++, Verilog, the HTML report).

Templates are hardware or HTML text with a few loops; every template folder is read the same way:
undefined names are errors, a block tag leaves no blank line behind, and only HTML is escaped
(values that came from a model file are escaped there; in C++ and Verilog they are already
identifiers, fpgagen.naming).
"""

from __future__ import annotations

from importlib import resources

import jinja2

FOLDERS = ("hls", "rtl", "report")


def environment(folder: str) -> jinja2.Environment:
    """The environment of `templates/<folder>`, shipped inside the package."""
    if folder not in FOLDERS:
        raise ValueError(f"no template folder {folder!r}")
    root = resources.files("fpgagen.templates").joinpath(folder)
    return jinja2.Environment(
        loader=jinja2.FunctionLoader(lambda name: root.joinpath(name).read_text(encoding="utf-8")),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",), default_for_string=False),
    )


def template_bytes(folder: str, name: str) -> bytes:
    """A file shipped beside the templates as it is (library code, headers)."""
    return resources.files("fpgagen.templates").joinpath(folder, name).read_bytes()
