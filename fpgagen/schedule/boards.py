"""Board profiles: the resources, off-chip memory and clock a design is scheduled against.

Built-in profiles live in `boards/<name>.yaml` beside this module, one flat mapping per board
with its figures from the vendor's data sheets (the `source` field names them). A custom board is
the same YAML in a file of the user's own, given by its path.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path

import yaml

from ..errors import FpgagenError

_BOARD_DIR = "boards"


@dataclass(frozen=True)
class Board:
    name: str
    part: str  # the FPGA's full part number
    dsp: int  # DSP slices (DSP48E2 or DSP48E1)
    bram36: int  # 36 Kb block RAMs
    uram: int  # 288 Kb UltraRAMs (0 on devices without them)
    lut: int
    ff: int
    memory: str  # off-chip memory kind (HBM2, DDR4, ...)
    channels: int  # independent off-chip memory channels (one AXI master each)
    channel_gbps: float  # peak bandwidth of one channel, in GB/s (10^9 bytes)
    clock_mhz: float  # the design clock the estimates assume
    source: str  # the data sheets the figures come from
    # what the platform's shell (its static region: PCIe, DMA, memory controllers) takes of the
    # device, left free by the scheduler; a profile's optional `shell:` mapping, zero without
    shell_dsp: int = 0
    shell_bram36: int = 0
    shell_uram: int = 0
    shell_lut: int = 0
    shell_ff: int = 0

    @property
    def bytes_per_cycle(self) -> float:
        """Off-chip bytes one channel delivers per design clock cycle."""
        return self.channel_gbps * 1e9 / (self.clock_mhz * 1e6)

    @property
    def clock_hz(self) -> float:
        return self.clock_mhz * 1e6

    @property
    def has_shell(self) -> bool:
        """Whether the profile reserves part of the device for the platform's shell."""
        return any(getattr(self, f"shell_{name}") for name in _SHELL_FIELDS)

    @property
    def has_free_uram(self) -> bool:
        """Whether UltraRAM is left besides the shell, for the tables a load phase fills."""
        return self.uram > self.shell_uram


_TEXT_FIELDS = ("name", "part", "memory", "source")
_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_COUNT_FIELDS = ("dsp", "bram36", "uram", "lut", "ff", "channels")
_RATE_FIELDS = ("channel_gbps", "clock_mhz")
_SHELL_FIELDS = ("dsp", "bram36", "uram", "lut", "ff")  # the keys of `shell:`


def builtin_boards() -> list[str]:
    """Names of the profiles shipped with fpgagen."""
    folder = resources.files(__package__).joinpath(_BOARD_DIR)
    return sorted(entry.name.removesuffix(".yaml") for entry in folder.iterdir() if entry.name.endswith(".yaml"))


def load_board(name_or_path: str | Path) -> Board:
    """A built-in board by name (`u280`), or a custom profile from a YAML file."""
    text = str(name_or_path)
    if text in builtin_boards():
        entry = resources.files(__package__).joinpath(_BOARD_DIR, f"{text}.yaml")
        return _parse(entry.read_text(encoding="utf-8"), f"built-in board {text}")
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.is_file():
            raise FpgagenError(f"{path}: no such board file")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise FpgagenError(
                f"{path}: not a text file (byte {exc.start} is not UTF-8); a board profile is YAML"
            ) from None
        return _parse(text, str(path))
    raise FpgagenError(
        f"unknown board {text!r}; built-in boards: {', '.join(builtin_boards())}, or a path to a .yaml profile"
    )


def _parse(text: str, where: str) -> Board:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise FpgagenError(f"{where}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise FpgagenError(f"{where}: a board profile is a mapping of fields, got {type(data).__name__}")
    shell = data.pop("shell", None) or {}
    if not isinstance(shell, dict):
        raise FpgagenError(f"{where}: shell is a mapping of the resources the platform takes, got {shell!r}")
    unknown_shell = sorted(str(key) for key in shell if key not in _SHELL_FIELDS)
    if unknown_shell:
        raise FpgagenError(
            f"{where}: unknown shell field(s) {', '.join(unknown_shell)}; a shell has {', '.join(_SHELL_FIELDS)}"
        )
    for name, value in shell.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise FpgagenError(f"{where}: shell field {name} must be a whole number, not negative, got {value!r}")
        if value > data.get(name, value):
            raise FpgagenError(f"{where}: the shell takes {value} {name}, more than the device's {data[name]}")
    expected = [f.name for f in fields(Board) if not f.name.startswith("shell_")]
    unknown = sorted(str(key) for key in data if key not in expected)
    if unknown:
        raise FpgagenError(f"{where}: unknown field(s) {', '.join(unknown)}; a board has {', '.join(expected)}")
    missing = [name for name in expected if name not in data]
    if missing:
        raise FpgagenError(f"{where}: missing field(s) {', '.join(missing)}")
    for name in _TEXT_FIELDS:
        if not isinstance(data[name], str) or not data[name].strip():
            raise FpgagenError(f"{where}: field {name} must be a non-empty string, got {data[name]!r}")
    # The part number is written into the vendor's scripts (run_hls.tcl, hls_config.cfg): a
    # profile is a user's file, so only a part number's characters may pass.
    if not _PART.fullmatch(data["part"]):
        raise FpgagenError(
            f"{where}: field part must be an FPGA part number (letters, digits, '-', '_' and '.'), got {data['part']!r}"
        )
    for name in _COUNT_FIELDS:
        value = data[name]
        # bool is an int in Python; `dsp: yes` is a typo, not a count
        if isinstance(value, bool) or not isinstance(value, int):
            raise FpgagenError(f"{where}: field {name} must be a whole number, got {value!r}")
        if value < 0:
            raise FpgagenError(f"{where}: field {name} must not be negative, got {value}")
    for name in _RATE_FIELDS:
        value = data[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FpgagenError(f"{where}: field {name} must be a number, got {value!r}")
        if not (value > 0 and math.isfinite(value)):
            raise FpgagenError(f"{where}: field {name} must be a positive, finite number, got {value}")
    values = {name: data[name] for name in expected}
    values.update({name: float(data[name]) for name in _RATE_FIELDS})
    values.update({f"shell_{name}": value for name, value in shell.items()})
    return Board(**values)
