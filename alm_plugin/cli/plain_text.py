"""The check that text the tools read (alm-score's input, alm-rescore's n-best lists and references)
is UTF-8 plain text: UTF-16, UTF-32 and NUL bytes are refused in one line naming the file and the fix."""

import re

from ..errors import ScoringError

LINE_BREAK = re.compile(rb"\r\n|\r|\n")
BYTE_ORDER_MARKS = (
    (b"\xff\xfe\x00\x00", "UTF-32", "FF FE 00 00"),
    (b"\x00\x00\xfe\xff", "UTF-32", "00 00 FE FF"),
    (b"\xff\xfe", "UTF-16", "FF FE"),
    (b"\xfe\xff", "UTF-16", "FE FF"),
)


def check_plain_text(data: bytes, label: str, error=ScoringError) -> None:
    """Raise ``error`` (one line) where ``data``, read from ``label``, is not UTF-8 plain text: a
    UTF-16 / UTF-32 byte-order mark, or a NUL byte (UTF-16 without its mark, a binary file)."""
    for mark, encoding, shown in BYTE_ORDER_MARKS:
        if data.startswith(mark):
            raise error(
                f"{label}: {encoding} text (it begins with the byte-order mark {shown}), not UTF-8: convert it, "
                f"e.g. iconv -f {encoding.lower()} -t utf-8"
            )
    # UTF-16 without its mark decodes as UTF-8 (NUL is a valid character) and would be scored as <unk> words
    nul = data.find(b"\0")
    if nul >= 0:
        breaks = list(LINE_BREAK.finditer(data, 0, nul))
        line, column = len(breaks) + 1, nul - (breaks[-1].end() if breaks else 0) + 1
        wide = utf32_without_mark(data)
        raise error(
            f"{label}:{line}: a NUL byte at column {column}: "
            + (
                f"this looks like {wide} text without a byte-order mark, not UTF-8; convert it, e.g. "
                f"iconv -f {wide.lower()} -t utf-8"
                if wide
                else "this is not plain text (UTF-16, or a binary file?); convert it to UTF-8, e.g. iconv -f "
                "utf-16 -t utf-8, or remove the NUL bytes"
            )
        )


def utf32_without_mark(data: bytes):
    """``"UTF-32BE"`` / ``"UTF-32LE"`` where ``data`` begins as a character below U+0100 does in that
    encoding (three NUL bytes before or after it), else None."""
    head = data[:4]
    if len(head) == 4 and head[:3] == b"\0\0\0" and head[3]:
        return "UTF-32BE"
    if len(head) == 4 and head[1:] == b"\0\0\0" and head[0]:
        return "UTF-32LE"
    return None
