"""Identifiers for generated code, derived from names found in model files.

A model file is untrusted text: its node and graph names reach C++ and Verilog only through
`identifier`, which keeps letters, digits and underscores, and avoids the keywords and reserved
spellings of both languages.
"""

from __future__ import annotations

import re

_RESERVED = frozenset(
    # C++ keywords and alternative tokens
    "alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t "
    "char32_t class compl concept const consteval constexpr constinit const_cast continue co_await "
    "co_return co_yield decltype default delete do double dynamic_cast else enum explicit export "
    "extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq "
    "nullptr operator or or_eq private protected public register reinterpret_cast requires return "
    "short signed sizeof static static_assert static_cast struct switch template this thread_local "
    "throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while "
    "xor xor_eq main "
    # Verilog-2005 and SystemVerilog keywords a design could collide with
    "always always_comb always_ff always_latch assign begin buf casex casez cell cmos config deassign "
    "defparam design disable edge end endcase endconfig endfunction endgenerate endmodule endprimitive "
    "endspecify endtable endtask event force forever fork function generate genvar highz0 highz1 ifnone "
    "incdir include initial inout input instance integer join large liblist library localparam logic "
    "macromodule medium module nand negedge nmos nor noshowcancelled notif0 notif1 output parameter "
    "pmos posedge primitive pull0 pull1 pulldown pullup pulsestyle_ondetect pulsestyle_onevent rcmos "
    "real realtime reg release repeat rnmos rpmos rtran rtranif0 rtranif1 scalared showcancelled small "
    "specify specparam strong0 strong1 supply0 supply1 table task time tran tranif0 tranif1 tri tri0 "
    "tri1 triand trior trireg uwire vectored wait wand weak0 weak1 wire wor xnor bit byte shortint "
    "longint string type".split()
)
MAX_LENGTH = 48


def identifier(text: str, fallback: str) -> str:
    """A safe, readable C++/Verilog identifier for `text`; `fallback` if nothing usable remains."""
    name = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()[:MAX_LENGTH].rstrip("_")
    name = re.sub(r"_+", "_", name)
    if not name:
        name = fallback
    if name[0].isdigit():
        name = f"n{name}"
    if name in _RESERVED:
        # a prefix, not a trailing underscore: the templates append suffixes such as `_top`, and an
        # identifier holding `__` is reserved to the C++ implementation
        name = f"x_{name}"
    return name


def unique_identifiers(texts: list[str], fallback: str) -> list[str]:
    """`identifier` for each text, with numeric suffixes where two would collide."""
    seen: set[str] = set()
    names = []
    for index, text in enumerate(texts):
        base = identifier(text, f"{fallback}{index}")
        name, suffix = base, 1
        while name in seen:
            name, suffix = f"{base}_{suffix}", suffix + 1
        seen.add(name)
        names.append(name)
    return names
