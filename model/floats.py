"""Float bit patterns of the element types a pad value may have: IEEE-style formats
given as (exponent bits, mantissa bits, finite only), rounded to nearest-even."""

import math
from fractions import Fraction

# name -> (exponent bits, mantissa bits, finite only: no infinities, NaN = all ones)
FLOAT_FORMATS = {
    "f16": (5, 10, False), "bf16": (8, 7, False), "f32": (8, 23, False),
    "f64": (11, 52, False), "f8e4m3": (4, 3, True), "f8e5m2": (5, 2, False),
}


def encode_float(x, fmt):
    """Bit pattern of x rounded to nearest-even in `fmt`, or None if it does not fit."""
    exp_bits, man_bits, finite_only = fmt
    bias = (1 << (exp_bits - 1)) - 1
    top = (1 << exp_bits) - 1
    sign = int(math.copysign(1.0, x) < 0) << (exp_bits + man_bits)
    if math.isnan(x):
        quiet = (1 << man_bits) - 1 if finite_only else 1 << (man_bits - 1)
        return sign | top << man_bits | quiet
    if math.isinf(x):
        return None if finite_only else sign | top << man_bits
    if x == 0:
        return sign
    exponent = max(math.frexp(abs(x))[1] - 1, 1 - bias)
    significand = round(Fraction(abs(x)) / Fraction(2) ** (exponent - man_bits))
    if significand >> (man_bits + 1):        # rounding carried into the next binade
        exponent, significand = exponent + 1, significand >> 1
    if significand >> man_bits:
        biased, mantissa = exponent + bias, significand - (1 << man_bits)
    else:
        biased, mantissa = 0, significand    # subnormal
    all_ones = (1 << man_bits) - 1
    if biased > (top if finite_only else top - 1) or (
            finite_only and biased == top and mantissa == all_ones):
        return None
    return sign | biased << man_bits | mantissa


def decode_float(bits, fmt):
    exp_bits, man_bits, finite_only = fmt
    bias = (1 << (exp_bits - 1)) - 1
    top = (1 << exp_bits) - 1
    sign = -1.0 if bits >> (exp_bits + man_bits) & 1 else 1.0
    biased, mantissa = bits >> man_bits & top, bits & ((1 << man_bits) - 1)
    if biased == top and not finite_only:
        return sign * math.inf if mantissa == 0 else math.nan
    if biased == top and mantissa == (1 << man_bits) - 1:
        return math.nan
    if biased == 0:
        return sign * math.ldexp(mantissa, 1 - bias - man_bits)
    return sign * math.ldexp((1 << man_bits) | mantissa, biased - bias - man_bits)
