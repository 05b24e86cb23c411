"""Java's String -> number/boolean parsers over Arrow string arrays, exact and never raising.

The Arrow twin of :mod:`.javacasts`. Arrow's own casts differ from Java's ``valueOf`` at the
edges (no ``+`` sign for ints, ``inf``/``nan`` for doubles, no hex floats, no Unicode digits),
and a failed cast fails the whole array; so each parser first decides with a regular expression
(RE2) which strings Java accepts, rewrites those into the form Arrow reads, and casts only them.

Every function returns ``(values, ok)`` as numpy arrays of the input's length: ``ok`` is false
where the input is null or Java throws NumberFormatException; ``values`` is meaningful where
``ok``. Nothing loops over rows in Python.

>>> values, ok = integer_value_of(pa.array(["+7", "٥", "1.0", None]))
>>> values[ok].tolist(), ok.tolist()
([7, 5], [True, True, False, False])
"""
from __future__ import annotations

from typing import Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..javalang import INT_MAX, INT_MIN, NON_ASCII_ZEROS

Parsed = Tuple[np.ndarray, np.ndarray]

_ASCII_INTEGER = r"^[+-]?[0-9]+\z"
_UNICODE_INTEGER = r"^[+-]?\p{Nd}+\z"
_LONG_MAX_DIGITS = {False: "9223372036854775807", True: "9223372036854775808"}  # by sign
# Double.valueOf's grammar after String.trim (chars <= U+0020), as in .javacasts.
_TRIM = r"^[\x00-\x20]+|[\x00-\x20]+\z"
_JAVA_DOUBLE = (r"^[+-]?(?:NaN|Infinity|(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                r"|0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?)\z")
_HEX = (r"^(?P<sign>[+-]?)0[xX](?P<significand>[0-9a-fA-F.]+)[pP](?P<exp_sign>[+-]?)"
        r"(?P<exp>[0-9]+)[fFdD]?\z")
_NIBBLE = np.full(256, 0, np.uint64)
for _i, _ch in enumerate("0123456789abcdef"):
    _NIBBLE[ord(_ch)] = _NIBBLE[ord(_ch.upper())] = _i
_BIT_LENGTH = np.array([0, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4], np.int64)


def _np(array: pa.Array, fill) -> np.ndarray:
    """A writable numpy copy of ``array`` with nulls replaced by ``fill``."""
    return np.array(pc.fill_null(array, fill).to_numpy(zero_copy_only=False))


def _matches(strings: pa.Array, pattern: str) -> np.ndarray:
    return _np(pc.match_substring_regex(strings, pattern), False)


def _ascii_digits(strings: pa.Array) -> pa.Array:
    """Non-ASCII BMP decimal digits translated to ASCII, in the strings made only of a sign and
    Unicode digits (rare: only those rows and the digit blocks they use are touched)."""
    unicode_rows = _matches(strings, _UNICODE_INTEGER) & ~_np(pc.string_is_ascii(strings), True)
    if not unicode_rows.any():
        return strings
    mask = pa.array(unicode_rows)
    rows = pc.filter(strings, mask)
    for zero in NON_ASCII_ZEROS:
        if not _matches(rows, f"[{chr(zero)}-{chr(zero + 9)}]").any():
            continue
        for digit in range(10):
            rows = pc.replace_substring(rows, chr(zero + digit), str(digit))
    return pc.replace_with_mask(strings, mask, rows)


def _integral(strings: pa.Array, long: bool) -> Parsed:
    """``Integer.valueOf`` / ``Long.valueOf``: optional sign, decimal digits, in range."""
    text = _ascii_digits(strings)
    ok = _matches(text, _ASCII_INTEGER)
    text = pc.replace_substring_regex(text, r"^\+", "")  # Arrow reads no plus sign
    negative = _np(pc.starts_with(text, "-"), False)
    digits = pc.replace_substring_regex(text, r"^-?0*", "")  # significant digits only
    count = _np(pc.binary_length(digits), 0)
    # Up to 18 digits fit an int64; 19 compare as text with the limit of that sign.
    fits = count < 19
    if long:
        for sign in (False, True):
            limit = _np(pc.less_equal(digits, _LONG_MAX_DIGITS[sign]), False)
            fits |= (count == 19) & (negative == sign) & limit
    ok &= fits
    values = _np(pc.cast(pc.if_else(pa.array(ok), text, None), pa.int64()), 0)
    if not long:
        ok &= (values >= INT_MIN) & (values <= INT_MAX)
    return values, ok


def integer_value_of(strings: pa.Array) -> Parsed:
    """Java ``Integer.valueOf(s)``: optional sign, Unicode decimal digits, 32-bit range."""
    return _integral(strings, long=False)


def long_value_of(strings: pa.Array) -> Parsed:
    """Java ``Long.valueOf(s)``: optional sign, Unicode decimal digits, 64-bit range."""
    return _integral(strings, long=True)


def double_value_of(strings: pa.Array) -> Parsed:
    """Java ``Double.valueOf(s)``: decimal text through Arrow's correctly rounded parser, hex
    floats (``0x1.8p3``) through :func:`_hex_doubles`."""
    text = pc.replace_substring_regex(strings, _TRIM, "")
    ok = _matches(text, _JAVA_DOUBLE)
    hexadecimal = ok & _matches(text, r"^[+-]?0[xX]")
    decimal = pc.replace_substring_regex(text, r"[fFdD]\z", "")
    values = _np(pc.cast(pc.if_else(pa.array(ok & ~hexadecimal), decimal, None), pa.float64()), 0.0)
    if hexadecimal.any():
        values[hexadecimal] = _hex_doubles(pc.filter(text, pa.array(hexadecimal)))
    return values, ok


def _hex_doubles(text: pa.Array) -> np.ndarray:
    """Hexadecimal floating-point literals (already checked against the grammar), correctly
    rounded to double as Java's parser does, including subnormals, overflow and Java's give-up on
    exponents beyond the int range (infinity or zero by the exponent's sign)."""
    parts = pc.extract_regex(text, _HEX)
    sign = _np(pc.equal(parts.field("sign"), "-"), False)
    significand = parts.field("significand")
    dot = _np(pc.find_substring(significand, "."), -1)
    length = _np(pc.binary_length(significand), 0)
    fraction = np.where(dot < 0, 0, length - dot - 1).astype(np.int64)
    digits = pc.replace_substring_regex(pc.replace_substring(significand, ".", ""), "^0+", "")
    count = _np(pc.binary_length(digits), 0).astype(np.int64)
    exp_text = pc.replace_substring_regex(parts.field("exp"), "^0+", "")
    exp_digits = _np(pc.binary_length(exp_text), 0)
    huge = (exp_digits > 10)
    exp = _np(pc.cast(pc.if_else(pa.array(huge), "0", pc.if_else(pc.equal(exp_text, ""), "0", exp_text)),
                      pa.int64()), 0)
    huge |= exp > INT_MAX
    exp_negative = _np(pc.equal(parts.field("exp_sign"), "-"), False)
    exp = np.where(exp_negative, -exp, exp)

    # The first 16 hex digits as an unsigned 64-bit number, and whether any later one is not 0.
    top_digits = pc.utf8_lpad(pc.utf8_slice_codeunits(digits, 0, 16), 16, "0")
    raw = _fixed_width_bytes(top_digits, 16)
    top = np.zeros(len(text), np.uint64)
    for j in range(16):
        top = (top << np.uint64(4)) | _NIBBLE[raw[:, j]]
    sticky = _matches(pc.utf8_slice_codeunits(digits, 16), "[1-9a-fA-F]")
    kept = np.minimum(count, 16)
    first = _NIBBLE[raw[np.arange(len(text)), np.minimum(16 - kept, 15)]].astype(np.int64)
    bits = 4 * (count - 1) + _BIT_LENGTH[first]          # bit length of the whole significand
    scale = exp - 4 * fraction                           # value = N * 2**scale
    shift = np.maximum(bits - 53, -1074 - scale)         # low bits of N dropped by rounding
    in_top = shift - 4 * (count - kept)                  # ... of which within `top`
    values = _round_shift(top, in_top, sticky, scale + shift)
    values = np.where(huge, np.where(exp_negative, 0.0, np.inf), values)
    values = np.where(count == 0, 0.0, values)
    return np.where(sign, -values, values)


def _fixed_width_bytes(strings: pa.Array, width: int) -> np.ndarray:
    """The bytes of non-null strings of exactly ``width`` bytes each, as an (n, width) matrix."""
    n = len(strings)
    offsets = np.frombuffer(strings.buffers()[1], np.int32)[strings.offset:strings.offset + n]
    data = np.frombuffer(strings.buffers()[2], np.uint8) if n else np.zeros(0, np.uint8)
    return data[offsets[:, None] + np.arange(width)] if n else np.zeros((0, width), np.uint8)


def _round_shift(top: np.ndarray, shift: np.ndarray, sticky: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """``round_half_even(top_with_sticky / 2**shift) * 2**exponent``, where ``sticky`` stands for
    nonzero bits below ``top`` (``shift`` is then at least 8, so they only break ties)."""
    exact = shift <= 0
    s = np.clip(shift, 1, 64).astype(np.uint64)
    low = np.where(s < 64, (np.uint64(1) << np.minimum(s, np.uint64(63))) - np.uint64(1),
                   np.uint64(0xFFFFFFFFFFFFFFFF))
    quotient = np.where(s < 64, top >> np.minimum(s, np.uint64(63)), np.uint64(0))
    remainder = top & low
    half = np.uint64(1) << (s - np.uint64(1))
    up = (remainder > half) | ((remainder == half) & (sticky | ((quotient & np.uint64(1)) == 1)))
    quotient = quotient + up.astype(np.uint64)
    quotient = np.where(shift > 64, np.uint64(0), quotient)
    mantissa = np.where(exact, top, quotient).astype(np.float64)
    power = np.clip(np.where(exact, exponent - shift, exponent), -3000, 3000).astype(np.int32)
    with np.errstate(over="ignore"):
        return np.ldexp(mantissa, power)


def boolean_value_of(strings: pa.Array) -> np.ndarray:
    """Java ``Boolean.valueOf(s)``: true iff ``s`` equals "true" ignoring ASCII case (no other
    character case-folds into it, see :func:`rocketfilter.javalang.boolean_value_of`); never
    fails, false for null."""
    return _np(pc.equal(pc.ascii_lower(strings), "true"), False)
