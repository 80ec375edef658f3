"""Checks of the generated HLS C++ against the structure Vitis HLS needs for II=1 (UG1399).

`structure_problems(text)` reads C++ source (the engine library and a generated top) and lists:
- a loop that is neither `#pragma HLS PIPELINE II=1`, nor a DATAFLOW region (its body's processes
  are), nor `#pragma HLS UNROLL` inside a pipelined loop or an inlined function, nor preceded by a
  `// fpgagen: not hot: <reason>` comment;
- an index into an array of `hls::stream` that is not a constant: an integer literal or the
  variable of an enclosing fully unrolled loop (a dynamic index is a multiplexer over every stream
  of the array, and a one-cycle loop through it).
It is a plain scanner of the C++ the templates write (braces, parentheses, pragmas), not a parser
of all C++.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NOT_HOT = re.compile(r"//\s*fpgagen: not hot: \S.*$")
_LOOP = re.compile(r"\b(for|while)\s*\(")
_STREAM_ARRAY = re.compile(r"hls::stream<[^;(){}]*?>\s*(?:\(\s*&\s*(\w+)\s*\)|(\w+))\s*\[")
_CONTROL = re.compile(r"\b(for|while|if|switch|do|else)\b[^;{}]*$")


@dataclass
class Block:
    start: int  # index of "{"
    end: int  # index of the matching "}"
    kind: str  # "function", "loop" or "other"
    pragmas: str = ""
    variable: str | None = None  # a for loop's variable
    line: int = 0
    not_hot: bool = False

    def contains(self, at: int) -> bool:
        return self.start < at < self.end


def _strip(text: str) -> str:
    """Comments and string literals blanked (same length, newlines kept), except not-hot markers."""
    out = []
    i = 0
    while i < len(text):
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            comment = text[i:end]
            out.append(comment if NOT_HOT.search(comment) else " " * len(comment))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = len(text) if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif text[i] == '"':
            end = i + 1
            while end < len(text) and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append('"' + " " * (end - i - 1) + '"')
            i = end + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _matching(text: str, at: int, open_: str, close: str) -> int:
    depth = 0
    for i in range(at, len(text)):
        if text[i] == open_:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return i
    raise ValueError(f"unbalanced {open_}{close} at offset {at}")


def _leading_pragmas(text: str, brace: int) -> str:
    """The `#pragma` lines at the start of the block opened at `brace`."""
    pragmas = []
    for line in text[brace + 1 :].splitlines()[1:]:
        stripped = line.strip()
        if stripped.startswith("#pragma"):
            pragmas.append(stripped)
        elif stripped:
            break
    return "\n".join(pragmas)


def _blocks(text: str) -> list[Block]:
    blocks = []
    # loops
    for match in _LOOP.finditer(text):
        close = _matching(text, match.end() - 1, "(", ")")
        brace = close + 1
        while brace < len(text) and text[brace].isspace():
            brace += 1
        if brace >= len(text) or text[brace] != "{":
            raise ValueError(f"line {text.count(chr(10), 0, match.start()) + 1}: a loop without braces")
        header = text[match.end() : close]
        variable = re.match(r"\s*(?:(?:const|unsigned|int|bool|long)\s+)+(\w+)\s*=", header)
        line_start = text.rfind("\n", 0, match.start())
        before = text[text.rfind("\n", 0, line_start) + 1 : line_start]
        blocks.append(
            Block(
                brace, _matching(text, brace, "{", "}"), "loop", _leading_pragmas(text, brace),
                variable[1] if variable and match[1] == "for" else None,
                text.count("\n", 0, match.start()) + 1, bool(NOT_HOT.search(before)),
            )
        )  # fmt: skip
    # function bodies: a "{" after ")" (or ") const") outside any other function
    functions: list[Block] = []
    for match in re.finditer(r"\)\s*(?:const\s*)?\{", text):
        brace = match.end() - 1
        if any(f.contains(brace) for f in functions):
            continue
        statement = text[max(text.rfind(";", 0, brace), text.rfind("}", 0, brace), 0) : brace]
        if _CONTROL.search(statement.replace("\n", " ")) and not re.search(
            r"\w+\s*\([^()]*\)\s*(const\s*)?$", statement
        ):
            continue
        functions.append(Block(brace, _matching(text, brace, "{", "}"), "function", _leading_pragmas(text, brace)))
    return blocks + functions


def structure_problems(source: str) -> list[str]:
    """Every unpipelined hot loop and dynamic stream-array index of `source`, as messages."""
    text = _strip(source)
    blocks = _blocks(text)
    loops = [block for block in blocks if block.kind == "loop"]
    functions = [block for block in blocks if block.kind == "function"]
    problems = []
    for loop in loops:
        if "PIPELINE II=1" in loop.pragmas or "DATAFLOW" in loop.pragmas or loop.not_hot:
            continue
        outer = [other for other in loops if other is not loop and other.contains(loop.start)]
        function = next((f for f in functions if f.contains(loop.start)), None)
        if "UNROLL" in loop.pragmas and "factor" not in loop.pragmas:
            pipelined = any("PIPELINE II=1" in other.pragmas for other in outer)
            inlined = function is not None and "INLINE" in function.pragmas
            if pipelined or inlined:
                continue
            problems.append(f"line {loop.line}: an unrolled loop outside any pipelined loop")
        else:
            problems.append(f"line {loop.line}: a loop neither pipelined (II=1) nor unrolled nor marked not hot")
    arrays = {name for match in _STREAM_ARRAY.finditer(text) for name in match.groups() if name}
    for name in sorted(arrays):
        for match in re.finditer(rf"(?<![\w:.>])(?<!>\s){name}\s*\[", text):
            before = text[: match.start()].rstrip()
            if before.endswith((">", "&")):  # a declaration
                continue
            at = match.end() - 1
            while at < len(text) and text[at] == "[":
                close = _matching(text, at, "[", "]")
                index = text[at + 1 : close].strip()
                unrolled = {loop.variable for loop in loops if loop.contains(at) and "UNROLL" in loop.pragmas}
                if not (re.fullmatch(r"\d+", index) or index in unrolled):
                    line = text.count("\n", 0, at) + 1
                    problems.append(f"line {line}: {name}[{index}] indexes an array of streams dynamically")
                at = close + 1
                while at < len(text) and text[at].isspace():
                    at += 1
    return problems
